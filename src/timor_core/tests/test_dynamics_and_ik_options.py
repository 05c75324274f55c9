"""Forward dynamics, TCP velocity/acceleration, manipulability and the IK options the reference offers (joint
mask, custom cost, method choice) – issue 13 item 12."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import InputError, ModuleAssembly
from timor_core.kinematics.ik import IKConfig

CHAIN = ["base", "J", "L_250", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"]


@pytest.fixture(scope="module")
def robot(robco):
    return ModuleAssembly.from_serial_modules(robco, CHAIN).robot


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), motor=st.booleans(), friction=st.booleans())
def test_fd_inverts_id(robot, seed, motor, friction):
    rng = np.random.default_rng(seed)
    q = robot.random_configuration(rng)
    dq, ddq = rng.uniform(-1, 1, robot.dof), rng.uniform(-2, 2, robot.dof)
    tau = robot.id(q, dq, ddq, motor_inertia=motor, friction=friction)
    np.testing.assert_allclose(robot.fd(tau, q, dq, motor_inertia=motor, friction=friction), ddq, atol=1e-8)


def test_fd_matches_pinocchios_aba_without_rotor_inertia(robot):
    rng = np.random.default_rng(1)
    q, dq, tau = robot.random_configuration(rng), rng.uniform(-1, 1, robot.dof), rng.uniform(-5, 5, robot.dof)
    model = robot.model.copy()
    model.armature[:] = 0.0
    expected = pin.aba(model, model.createData(), q, dq, tau)
    np.testing.assert_allclose(robot.fd(tau, q, dq, motor_inertia=False), expected, atol=1e-9)
    with pytest.raises(InputError):
        robot.fd(np.zeros(robot.dof + 1), q, dq)


def test_tcp_velocity_and_acceleration_by_finite_differences(robot):
    rng = np.random.default_rng(2)
    q, dq, ddq = robot.random_configuration(rng), rng.uniform(-1, 1, robot.dof), rng.uniform(-1, 1, robot.dof)
    h = 1e-6
    T0, T1 = robot.fk(q - h * dq), robot.fk(q + h * dq)
    v = robot.tcp_velocity(q, dq)
    np.testing.assert_allclose(v[:3], (T1[:3, 3] - T0[:3, 3]) / (2 * h), atol=1e-6)
    dR = (T1[:3, :3] - T0[:3, :3]) / (2 * h) @ robot.fk(q)[:3, :3].T  # = [ω]x
    np.testing.assert_allclose(v[3:], [dR[2, 1], dR[0, 2], dR[1, 0]], atol=1e-6)

    # classical acceleration: derivative of the linear velocity along the motion q(t) = q + dq t + ddq t²/2
    def lin(t):
        return robot.tcp_velocity(q + dq * t + 0.5 * ddq * t * t, dq + ddq * t)[:3]

    np.testing.assert_allclose(robot.tcp_acceleration(q, dq, ddq)[:3], (lin(h) - lin(-h)) / (2 * h), atol=1e-5)


def test_manipulability_index(robot, robco):
    rng = np.random.default_rng(3)
    q = robot.random_configuration(rng)
    J = robot.jacobian(q, reference="local")
    assert robot.manipulability_index(q) == pytest.approx(np.sqrt(np.linalg.det(J @ J.T)), rel=1e-9)
    assert robot.manipulability_index(np.zeros(robot.dof)) < 1e-6 < robot.manipulability_index(q)  # stretched out
    three = ModuleAssembly.from_serial_modules(robco, ["base", "J", "L_250", "J", "I_200", "J", "gripper"]).robot
    assert three.manipulability_index(three.random_configuration(rng)) == 0.0  # fewer than 6 DOF


def test_joint_mask_keeps_frozen_joints(robot):
    rng = np.random.default_rng(4)
    q_goal = robot.random_configuration(rng)
    q_init = q_goal + rng.uniform(-0.3, 0.3, robot.dof)
    mask = np.array([False, True, True, True, True, True])
    q_init[0] = q_goal[0]  # the frozen joint already sits where the goal needs it
    q, ok = robot.ik(robot.fk(q_goal), q_init=q_init, joint_mask=mask, rng=0, ignore_self_collision=True)
    assert ok and q[0] == q_init[0]
    assert np.allclose(robot.fk(q)[:3, 3], robot.fk(q_goal)[:3, 3], atol=2e-4)  # default tolerance: 0.1 mm, 0.1°
    assert np.allclose(robot.fk(q)[:3, :3], robot.fk(q_goal)[:3, :3], atol=3e-3)
    q_init[0] += -0.5 if q_init[0] > 0 else 0.5  # the goal is (in general) out of reach with joint 0 frozen there
    q, ok = robot.ik(robot.fk(q_goal), q_init=q_init, joint_mask=mask, rng=0, ignore_self_collision=True)
    assert q[0] == q_init[0]
    with pytest.raises(InputError, match="q_init"):
        robot.ik(robot.fk(q_goal), joint_mask=mask)
    with pytest.raises(InputError, match="joint_mask"):
        robot.ik(robot.fk(q_goal), q_init=q_init, joint_mask=[True, False])


def test_custom_cost_picks_the_best_of_several_solutions(robot):
    rng = np.random.default_rng(5)
    q_goal = robot.random_configuration(rng)
    T = robot.fk(q_goal)

    def distance_to_zero(_robot, q, _desired):
        return float(np.linalg.norm(q))

    config = IKConfig(solutions=8)
    plain = [robot.ik(T, rng=k, ignore_self_collision=True)[0] for k in range(4)]
    best = [robot.ik(T, rng=k, config=config, ik_cost_function=distance_to_zero, ignore_self_collision=True)
            for k in range(4)]  # fmt: skip
    assert all(ok for _, ok in best)
    assert np.mean([np.linalg.norm(q) for q, _ in best]) < np.mean([np.linalg.norm(q) for q in plain])
    with pytest.raises(InputError, match="solutions"):
        IKConfig(solutions=0).check()


def test_scipy_method_solves_the_same_goals(robot):
    rng = np.random.default_rng(6)
    for k in range(5):
        q_goal = robot.random_configuration(rng)
        if robot.has_self_collision(q_goal):
            continue
        T = robot.fk(q_goal)
        result = robot.ik(T, rng=k, ik_method="scipy", details=True)
        assert result.success, result.reason
        assert np.allclose(robot.fk(result.q)[:3, 3], T[:3, 3], atol=2e-4)
    with pytest.raises(InputError, match="method"):
        robot.ik(T, ik_method="newton")
