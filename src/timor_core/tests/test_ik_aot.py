"""The IK's kernels built ahead of time (``kinematics/ik_aot.py``, ``ik_kernel.ahead``, issue 38): the same results
as numba's kernels to the last digit (kernel by kernel and whole IK calls), run from a process's first IK call
without numba wherever compiled kernels are allowed, never where ``TIMOR_COMPILED=0``; a build that does not load
(broken, or made for other sources or another numpy) is not used, and the IK goes on as before."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import ahead_builds
import numpy as np
import pytest
from urdf_agreement import robots_share

from timor_core import ModuleAssembly, ModulesDB, PinRobot
from timor_core.common import compiled
from timor_core.kinematics import ik_kernel
from timor_core.kinematics.ik import DEFAULT_IK_CONFIG
from timor_core.kinematics.tolerance import tolerance_from_json

TOLERANCES = {
    "sphere_cone": tolerance_from_json(["r_sph", "Theta_R"], [[0.0, 0.001], [0.0, math.radians(1.0)]]),
    "box_cone": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-0.001, 0.001]] * 3 + [[0.0, math.pi / 4]]),
}
ARMS = ("ur_description/urdf/ur5_robot.urdf", "panda_description/urdf/panda.urdf", "xarm_description/urdf/xarm7.urdf")
ROBCO = ["base", "J", "L_100", "J", "L_150", "J", "L_100", "J", "L_100", "J", "gripper"]


_defaults_after, built, present, _use = ahead_builds.fixtures(ik_kernel, "timor_core.kinematics.ik_aot")
# one worker runs this file: the module's build (``built``, ~7 CPU-s, where ``make test`` has not made it) is made
# once, not by each xdist worker
pytestmark = pytest.mark.xdist_group("ahead_ik")


def _robots() -> list[PinRobot]:
    out = [ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO).robot]
    share = robots_share()
    if share is not None:
        out += [PinRobot.from_urdf(share / "robots" / arm, share.parent) for arm in ARMS]
    return out


def _calls(robot: PinRobot, goals: list[np.ndarray], tolerance) -> list[tuple]:
    """Each goal's IK call from seed k: (q, success, tries, iterations, residual, the generator's next number)."""
    out = []
    for k, goal in enumerate(goals):
        rng = np.random.default_rng(k)
        r = robot.ik(goal, tolerance=tolerance, rng=rng, ignore_self_collision=True, details=True)
        out.append((r.q.tolist(), r.success, r.tries, r.iterations, r.residual, float(rng.random())))
    return out


@pytest.mark.slow
def test_ahead_built_and_numba_kernels_give_the_same_ik_calls(present, tmp_path):
    """Whole IK calls on a robot of the embedded set and three arms of example-robot-data, reachable goals and goals
    moved off by ~0.2 m, both tolerances: the same q to the last digit, tries, iterations, residual and generator
    state, whether the ahead-built kernels or numba's run."""
    rng = np.random.default_rng(5)
    compiled.use_compiled(True)
    for robot in _robots():
        goals = [robot.fk(robot.random_configuration(rng)).copy() for _ in range(12)]
        for goal in goals[::3]:
            goal[:3, 3] += rng.normal(size=3) * 0.2
        for name, tolerance in TOLERANCES.items():
            _use(present)
            assert ik_kernel.ready() is not None and ik_kernel.ready().ahead
            ahead = _calls(robot, goals, tolerance)
            _use(tmp_path)  # nothing built there: numba's kernels
            assert not ik_kernel.ready().ahead
            jit = _calls(robot, goals, tolerance)
            assert ahead == jit, (robot.name, name)
            assert any(call[1] for call in ahead) and any(call[2] > 1 for call in ahead), "too easy to tell"


@pytest.mark.slow
def test_each_ahead_built_kernel_returns_what_numbas_returns(present):
    """best_start, descend, within and plateau_stop on random chains' inputs: equal outputs."""
    from timor_core.kinematics.ik_descent import compiled_route
    from timor_core.kinematics.ik_residual import projector

    _use(present)
    ahead, jit = ik_kernel.ahead(), ik_kernel.jit_kernels()
    assert ahead is not None and ahead.ahead
    module = sys.modules[ik_kernel.ahead_path(present).name.split(".")[0]]
    rng = np.random.default_rng(3)
    for robot in _robots():
        project = projector(TOLERANCES["sphere_cone"], 1e-7)
        route = compiled_route(robot, robot.tcp, DEFAULT_IK_CONFIG, project)
        assert route is not None
        chain = route.chain
        for _ in range(20):
            goal = robot.fk(robot.random_configuration(rng))
            params = project.lm_params(goal)
            candidates = np.array([robot.random_configuration(rng) for _ in range(4)])
            a = ik_kernel.start_index(ahead, chain, candidates, params)
            assert a == ik_kernel.start_index(jit, chain, candidates, params)
            q0 = candidates[a]
            out = [ik_kernel.descend(k, chain, params, q0, route.lower, route.upper, route.crossable,
                                     np.zeros(robot.dof, bool), route.settings) for k in (ahead, jit)]  # fmt: skip
            np.testing.assert_array_equal(out[0][0], out[1][0])
            np.testing.assert_array_equal(out[0][2], out[1][2])
            assert out[0][1] == out[1][1] and out[0][3:] == out[1][3:]
            T = np.ascontiguousarray(out[0][2])
            assert module.within(T, params, route.bounds) == ik_kernel.tries_kernels().within(T, params, route.bounds)
            state = np.array([rng.uniform(0, 1), 3.0, 1.0, rng.uniform(0, 1)])
            s1, s2 = state.copy(), state.copy()
            assert ahead.plateau_stop(s1, route.limits, False) == jit.plateau_stop(s2, route.limits, False)
            np.testing.assert_array_equal(s1, s2)


@pytest.mark.slow
def test_a_process_runs_the_ahead_built_kernels_from_its_first_call_without_numba(present):
    """numba hidden (``import numba`` fails): with a build, the first IK call already runs it (no warning, numba
    never imported), the answers those of the compiled kernels; with ``TIMOR_COMPILED=0`` it is never used."""
    code = textwrap.dedent(
        f"""
        import logging, sys
        sys.modules["numba"] = None  # import numba raises ImportError
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
        from pathlib import Path
        import numpy as np
        from timor_core import ModuleAssembly, ModulesDB
        from timor_core.kinematics import ik_kernel
        ik_kernel.AHEAD_FOLDER = Path({str(present)!r})
        robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), {ROBCO!r}).robot
        goal = robot.fk(np.array([0.3, -0.5, 0.8, 0.2, 0.1]))
        results = [robot.ik(goal, rng=k, details=True) for k in range(3)]
        print("solved", all(r.success for r in results))
        kernels = ik_kernel.ready()
        print("ahead", kernels is not None and kernels.ahead)
        print("q", [r.q.tolist() for r in results])
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TIMOR_COMPILED"}  # the default, not the suite's choice
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "solved True" in out.stdout and "ahead True" in out.stdout, out.stdout
    assert "numba is not available" not in out.stdout, out.stdout
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(env, TIMOR_COMPILED="0"))  # fmt: skip
    assert off.returncode == 0, off.stderr
    assert "solved True" in off.stdout and "ahead False" in off.stdout, off.stdout
    _use(present)
    compiled.use_compiled(True)
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO).robot
    goal = robot.fk(np.array([0.3, -0.5, 0.8, 0.2, 0.1]))
    here = [robot.ik(goal, rng=k, details=True).q.tolist() for k in range(3)]
    assert f"q {here}" in out.stdout  # the same q as this process's compiled kernels


def test_a_build_that_does_not_load_is_not_used(tmp_path, caplog):
    """A broken file where the build belongs: one warning, no kernels from it, and the IK goes on (numba's kernels
    by the rule, here the interpreted ones)."""
    ik_kernel.AHEAD_FOLDER = tmp_path
    ik_kernel.ahead_path().write_bytes(b"not an extension module")
    ik_kernel.forget_ahead()
    compiled.use_compiled(None)
    assert ik_kernel.ahead() is None
    assert "do not load" in caplog.text
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO).robot
    goal = robot.fk(np.array([0.3, -0.5, 0.8, 0.2, 0.1]))
    assert robot.ik(goal, rng=0)[1]


def test_a_build_for_other_sources_or_another_numpy_has_another_name(tmp_path, monkeypatch):
    """The build's file name hashes the kernels' sources and numpy's version: a build made before either changed is
    never looked for; the name is stable otherwise."""
    path = ik_kernel.ahead_path(tmp_path)
    assert path == ik_kernel.ahead_path(tmp_path) and path.parent == tmp_path and path.name.startswith("ik_aot_")
    monkeypatch.setattr(ik_kernel.np, "__version__", "0.0")
    assert ik_kernel.ahead_path(tmp_path) != path
    monkeypatch.undo()
    sources = Path(ik_kernel.__file__).parent
    for source in ik_kernel.AHEAD_SOURCES:
        text = (sources / source).read_bytes()
        real = Path.read_bytes
        monkeypatch.setattr(Path, "read_bytes", lambda p, s=source, t=text: t + b"#" if p.name == s else real(p))
        assert ik_kernel.ahead_path(tmp_path) != path, source
        monkeypatch.undo()


def test_the_builds_name_hashes_every_file_its_kernels_reach():
    """Every file of a kernel the build's exports call (directly or through other kernels: numba compiles them into
    the module) is among the sources its name hashes, so an edit there builds another module and a stale one is never
    loaded (a kernel moved to a file of its own that this list left out would be)."""
    pytest.importorskip("numba")
    from timor_core.kinematics import ik_aot

    reached = ahead_builds.kernel_files(kernel for kernel, _ in ik_aot.EXPORTS.values())
    files = set().union(*reached.values())
    assert {"ik_jit.py", "ik_jit_residual.py", "ik_jit_tries.py"} <= files and "terms" in reached
    assert files <= set(ik_kernel.AHEAD_SOURCES), files - set(ik_kernel.AHEAD_SOURCES)


def test_without_numbas_ahead_of_time_compiler_the_build_says_so(tmp_path, monkeypatch, capsys):
    """A numba without ``numba.pycc`` (pending deprecation there): the build refuses with a TimorError, the command
    exits 1 naming the reason, nothing is written, and nothing is looked up from it."""
    ahead_builds.check_no_compiler(ik_kernel, "timor_core.kinematics.ik_aot", tmp_path, monkeypatch, capsys)
