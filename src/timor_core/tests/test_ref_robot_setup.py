"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_robot_setup.py (timor-python 1.1.1)
ported to timor_core, on example-robot-data's Panda (the reference ships its own copy of that robot).

Deliberate differences are marked ``deliberate difference``; features timor_core lacks are strict xfails.
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from timor_core import ConnectorError, ModuleAssembly, ModulesDB, PinRobot
from timor_core.export.urdf_import.importer import assembly_from_urdf
from timor_core.kinematics.ik import IKConfig
from timor_core.kinematics.tolerance import Composed, ProjectionTolerance
from timor_core.kinematics.tolerance_base import Interval


@pytest.fixture(scope="module")
def panda_paths() -> tuple[Path, Path]:
    try:
        files = metadata.files("example-robot-data") or []
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    urdf = next((Path(f.locate()) for f in files if str(f).endswith("panda_description/urdf/panda.urdf")), None)
    if urdf is None:
        pytest.skip("example-robot-data holds no panda.urdf")
    share = urdf.resolve().parents[3]
    return urdf, share.parent


@pytest.fixture(scope="module")
def panda(panda_paths) -> PinRobot:
    urdf, packages = panda_paths
    return PinRobot.from_urdf(urdf, packages, tcp_link="panda_hand")


def _random_q(robot: PinRobot, rng: np.random.Generator) -> np.ndarray:
    lo = np.maximum(robot.joint_limits[0], -2 * np.pi)
    hi = np.minimum(robot.joint_limits[1], 2 * np.pi)
    return lo + (hi - lo) * rng.random(robot.dof)


def test_first_load_robot(panda):
    """ref: test_robot_setup.py::test__first_load_robot"""
    assert isinstance(panda, PinRobot) and panda.dof == 9  # 7 arm joints and the two fingers


def test_base_placement(panda_paths):
    """ref: test_robot_setup.py::test_base_placement and ::test_multiple_base_placement"""
    # deliberate difference: robots are immutable (no robot.move / set_base_placement); a placement is given when
    # the robot is built, and the same assembly builds robots at any placement
    urdf, packages = panda_paths
    assembly = assembly_from_urdf(urdf, [packages], tcp_link="panda_hand")
    rng = np.random.default_rng(1234)
    q = _random_q(assembly.robot, rng)
    fk_eye = assembly.robot.fk(q)
    for _ in range(20):
        T = pin.SE3.Random().homogeneous
        moved = assembly.to_pin_robot(base_placement=T)
        np.testing.assert_allclose(moved.placement, T, atol=1e-12)
        np.testing.assert_allclose(moved.fk(q), T @ fk_eye, atol=1e-9)
    # deliberate difference: the reference also mounts a module by any connector (J2 by its proximal one);
    # timor_core mounts assemblies only by a connector of type 'base' and refuses the rest with a ConnectorError
    db = ModulesDB.from_name("geometric_primitive_modules")
    with pytest.raises(ConnectorError, match="not 'base'"):
        ModuleAssembly(db, ["J2"], base_connector=(0, "J2_proximal_connector"))


def test_empty_robot(primitives):
    """ref: test_robot_setup.py::test_empty_robot"""
    # deliberate difference: an empty assembly has no robot (AssemblyError); the lightest robot is a base alone
    robot = ModuleAssembly.from_serial_modules(primitives, ["base"]).robot
    assert robot.dof == 0 and robot.mass == pytest.approx(primitives["base"].mass)


def test_robot_eef_velocity(panda):
    """ref: test_robot_setup.py::test_robot_eef_velocity"""
    rng = np.random.default_rng(1234)
    for _ in range(20):
        q = _random_q(panda, rng)
        for k in (0, 1):  # one joint moving: v = omega x r, omega along that joint's axis
            dq = np.zeros(panda.dof)
            dq[k] = 1.0
            joint = panda.model.joints[k + 1]
            pin.forwardKinematics(panda.model, panda.data, q)
            frame = panda.data.oMi[k + 1]
            axis = frame.rotation[:, 2]
            r = panda.fk(q)[:3, 3] - frame.translation
            v = panda.tcp_velocity(q, dq)
            np.testing.assert_allclose(v[:3], np.cross(axis, r), atol=1e-9)
            np.testing.assert_allclose(v[3:], axis, atol=1e-9)
            assert joint.nv == 1


def test_ik_rng(panda):
    """ref: test_robot_setup.py::test_ik_rng"""
    rng = np.random.default_rng(10)
    for _ in range(20):
        goal = panda.fk(panda.random_configuration(rng))
        first = panda.ik(goal, rng=10, ignore_self_collision=True)[0]
        for _ in range(2):
            np.testing.assert_allclose(panda.ik(goal, rng=10, ignore_self_collision=True)[0], first)


def test_robot_fk(panda):
    """ref: test_robot_setup.py::test_robot_fk"""
    q = _random_q(panda, np.random.default_rng(1))
    assert panda.fk(q).shape == (4, 4)  # deliberate difference: 4x4 arrays, not Transformation objects
    assert panda.fk(q, "joints").shape == (panda.dof, 4, 4)
    full = panda.fk(q, "full")
    assert isinstance(full, dict) and np.allclose(full[panda.tcp_name], panda.fk(q))
    # computing collision geometry placements does not change the kinematics
    panda.has_self_collision(q)
    np.testing.assert_array_equal(panda.fk(q), full[panda.tcp_name])


def test_robot_friction_and_id(panda):
    """ref: test_robot_setup.py::test_robot_friction and ::test_robot_id"""
    # deliberate difference: Coulomb friction is sign(dq) * f (the reference smooths it as sin(atan(100 dq)))
    rng = np.random.default_rng(1234)
    for _ in range(50):
        q = _random_q(panda, rng)
        dq = rng.uniform(-1, 1, panda.dof) * np.minimum(panda.velocity_limits, 2.0)
        tau = rng.uniform(-1, 1, panda.dof) * np.minimum(panda.torque_limits, 50.0)
        model = panda.model.copy()
        model.armature[:] = 0.0
        ddq = pin.aba(model, model.createData(), q, dq, tau)  # rigid bodies only
        np.testing.assert_allclose(panda.id(q, dq, ddq, motor_inertia=False, friction=False), tau, atol=1e-8)
        for friction in (False, True):
            ddq = panda.fd(tau, q, dq, friction=friction)
            np.testing.assert_allclose(panda.id(q, dq, ddq, friction=friction), tau, atol=1e-8)
        friction_torque = panda.id(q, dq, np.zeros(panda.dof), friction=True) - panda.id(q, dq, np.zeros(panda.dof))
        expected = panda.model.damping * dq + panda.model.friction * np.sign(dq)
        np.testing.assert_allclose(friction_torque, expected, atol=1e-9)


def test_robot_ik(panda):
    """ref: test_robot_setup.py::test_robot_ik (both methods solve almost any FK pose; masks; torque limits). The
    masked calls, whose goal is mostly out of reach with the held joints, run 3 tries (random restarts included)
    rather than the ~14 that end such a call: what they return keeps the held joints either way, and the scipy
    method's ~14 failing tries were 7.4 of the test's 8.8 CPU-s."""
    rng = np.random.default_rng(1234)
    tol = Composed(
        [ProjectionTolerance(p, (-1e-3, 1e-3)) for p in ("x", "y", "z")] + [ProjectionTolerance("Theta_R", (0, 0.05))]
    )
    errors = {"jacobian": 0, "scipy": 0}
    n = 20
    for k in range(n):
        q_goal = _random_q(panda, rng)
        if panda.has_self_collision(q_goal):
            continue
        goal = panda.fk(q_goal)
        for method in errors:
            q, ok = panda.ik(goal, tol, rng=k, ik_method=method)
            if not ok:
                errors[method] += 1
                continue
            assert tol.valid(goal, panda.fk(q)) and np.max(np.abs(q)) < 2 * np.pi
            assert not panda.has_self_collision(q)
        mask = rng.random(panda.dof) > 0.5
        q_start = _random_q(panda, rng)
        for method in errors:
            q, _ = panda.ik(goal, tol, q_init=q_start, joint_mask=mask, rng=k, ik_method=method, max_n_tries=3)
            np.testing.assert_array_equal(q[~mask], np.clip(q_start, *panda.joint_limits)[~mask])
    for method, count in errors.items():
        assert count < 0.03 * n + 1, f"{method} failed {count} of {n}"


def test_ik_respects_torque_limits(panda_paths):
    """ref: test_robot_setup.py::test_robot_ik (zero torque limits: no static solution)"""
    urdf, packages = panda_paths
    robot = PinRobot.from_urdf(urdf, packages, tcp_link="panda_hand")
    robot.model.effortLimit[:] = 0.0
    goal = robot.fk(_random_q(robot, np.random.default_rng(2)))
    q, ok = robot.ik(goal, check_static_torques=True, config=IKConfig(max_n_tries=5), rng=0)
    assert not ok


@pytest.mark.xfail(
    strict=True, raises=AttributeError, reason="missing feature: a public default_ik_cost_function (pose distance cost)"
)
def test_default_ik_cost_function():
    """ref: test_robot_setup.py::test_default_ik_cost_function"""
    from timor_core.kinematics import ik

    assert ik.default_ik_cost_function  # type: ignore[attr-defined]


def test_robot_random_conf(panda):
    """ref: test_robot_setup.py::test_robot_random_conf"""
    rng = np.random.default_rng(0)
    assert all(panda.within_limits(panda.random_configuration(rng)) for _ in range(1000))


def test_robot_viz():
    """ref: test_robot_setup.py::test_robot_viz"""
    pytest.skip("not applicable: the viewer (viser, in a browser) is tested in test_viz_viewer")


def test_robot_manip(panda):
    """ref: test_robot_setup.py::test_robot_manip"""
    assert panda.manipulability_index(np.zeros(panda.dof)) == pytest.approx(0.0, abs=1e-9)
    q = np.array([0.0, -np.pi / 4, 0.0, np.pi / 2, 0.0, np.pi / 2, 0.0, 0.0, 0.0])
    assert 0.0 < panda.manipulability_index(q) < 0.5


def test_interval_type_is_shared():
    """Intervals are the same type wherever they are imported from (tolerance re-exports tolerance_base)."""
    from timor_core.kinematics import tolerance

    assert tolerance.Interval is Interval
