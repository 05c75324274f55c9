"""Hostile arguments to the robot API never reach Pinocchio or coal unchecked: a typed error, never a crash.

Pinocchio indexes its frame and joint vectors without bounds checks in release builds: an unknown frame name
used to kill the interpreter with SIGSEGV (``robot.jacobian(q, frame="nosuch")``). The battery runs in a child
process, so a crash fails this test instead of the whole suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from timor_core import InputError, ModuleAssembly, ModulesDB
from timor_core.kinematics.ik import IKConfig

_BATTERY = textwrap.dedent(
    """
    import math
    import numpy as np
    from timor_core import InputError, ModuleAssembly, ModulesDB
    from timor_core.kinematics.ik import solve_ik

    db = ModulesDB.from_name("geometric_primitive_modules")
    robot = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef")).robot
    q = np.zeros(robot.dof)
    calls = {
        "jacobian unknown frame": lambda: robot.jacobian(q, frame="nosuch"),
        "jacobian frame index past the end": lambda: robot.jacobian(q, frame=10_000),
        "jacobian negative frame index": lambda: robot.jacobian(q, frame=-1),
        "jacobian frame of wrong type": lambda: robot.jacobian(q, frame=1.5),
        "jacobian bad reference": lambda: robot.jacobian(q, reference=None),
        "frame_pose unknown frame": lambda: robot.frame_pose("nosuch", q),
        "frame_pose frame None": lambda: robot.frame_pose(None, q),
        "reach frame index past the end": lambda: robot.reach(10_000),
        "fk q too short": lambda: robot.fk(q[:-1]),
        "fk q too long": lambda: robot.fk(np.zeros(robot.dof + 5)),
        "fk q NaN": lambda: robot.fk(np.full(robot.dof, math.nan)),
        "fk q of strings": lambda: robot.fk(["a"] * robot.dof),
        "fk q ragged": lambda: robot.fk([[1, 2], [3]]),
        "id dq wrong size": lambda: robot.id(q, dq=np.zeros(robot.dof + 1)),
        "id ddq infinite": lambda: robot.id(q, ddq=np.full(robot.dof, math.inf)),
        "static torque q NaN": lambda: robot.static_torque([math.nan] * robot.dof),
        "mass matrix q wrong size": lambda: robot.mass_matrix(np.zeros(1)),
        "self collision q wrong size": lambda: robot.has_self_collision(np.zeros(robot.dof + 3)),
        "collision checker q wrong size": lambda: robot.collision_checker().in_collision(np.zeros(robot.dof + 3)),
        "collisions with NaN margin": lambda: robot.has_collision(q, margin=math.nan),
        "collisions with negative margin": lambda: robot.collisions(q, margin=-1.0),
        "collisions with a non-task": lambda: robot.has_collision(q, task="tasks/x.json"),
        "ik frame unknown": lambda: solve_ik(robot, np.eye(4), None, frame="nosuch"),
        "ik pose wrong shape": lambda: robot.ik(np.eye(3)),
        "ik pose NaN": lambda: robot.ik(np.full((4, 4), math.nan)),
        "ik q_init wrong size": lambda: robot.ik(robot.fk(q), q_init=np.zeros(robot.dof + 2)),
        "ik q_init NaN": lambda: robot.ik(robot.fk(q), q_init=np.full(robot.dof, math.nan)),
        "ik negative seed": lambda: robot.ik(robot.fk(q), rng=-1),
        "ik huge max_iter": lambda: robot.ik(robot.fk(q), max_iter=10**12),
        "ik zero tries": lambda: robot.ik(robot.fk(q), max_n_tries=0),
        "random configuration negative seed": lambda: robot.random_configuration(-5),
        "random configuration float seed": lambda: robot.random_configuration(1.5),
    }
    for name, call in calls.items():
        try:
            call()
        except InputError as exc:
            print(f"ok {name}: {exc}")
        except Exception as exc:
            print(f"WRONG {name}: {type(exc).__name__}: {exc}")
        else:
            print(f"WRONG {name}: accepted")
    """
)


def test_hostile_robot_calls_are_refused_without_crashing():
    proc = subprocess.run([sys.executable, "-c", _BATTERY], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"the interpreter died (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lines = proc.stdout.splitlines()
    assert len(lines) == 32, proc.stdout
    wrong = [line for line in lines if not line.startswith("ok ")]
    assert not wrong, "\n".join(wrong)
    assert any("nosuch" in line for line in lines if line.startswith("ok jacobian unknown frame"))


@pytest.fixture(scope="module")
def robot(primitives: ModulesDB):
    return ModuleAssembly.from_serial_modules(primitives, ("base", "J2", "i_45", "J2", "J2", "eef")).robot


@given(st.one_of(st.text(max_size=40), st.integers(), st.floats(), st.none(), st.booleans()))
def test_frame_id_accepts_exactly_existing_frames(robot, frame):
    names = robot.frame_names
    valid = (isinstance(frame, str) and frame in names) or (
        isinstance(frame, int) and not isinstance(frame, bool) and 0 <= frame < len(names)
    )
    if valid:
        fid = robot.frame_id(frame)
        assert 0 <= fid < len(names)
        assert names[fid] == frame or fid == frame
        assert robot.jacobian(np.zeros(robot.dof), frame=frame).shape == (6, robot.dof)
    else:
        with pytest.raises(InputError):
            robot.frame_id(frame)


def test_every_named_frame_has_a_jacobian(robot):
    q = robot.random_configuration(3)
    for name in robot.frame_names:
        assert np.all(np.isfinite(robot.jacobian(q, frame=name)))


@given(
    st.fixed_dictionaries(
        {
            "max_iter": st.one_of(st.integers(-5, 10**7), st.floats(), st.booleans()),
            "max_n_tries": st.one_of(st.integers(-5, 10**7), st.none()),
            "damping": st.floats(allow_nan=True, allow_infinity=True),
        }
    )
)
def test_ik_config_check_refuses_settings_out_of_range(settings):
    settings = {k: v for k, v in settings.items() if v is not None}
    config = IKConfig(**settings)
    ok = all(
        isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 100_000
        for k, v in settings.items()
        if k in ("max_iter", "max_n_tries")
    ) and (0 <= settings["damping"] < float("inf"))
    if ok:
        config.check()
    else:
        with pytest.raises(InputError):
            config.check()
