"""Trajectory conveniences the reference offers (issue 13 item 12): stationary segments, sample look-up by time,
concatenation with +, slicing, TCP poses along a trajectory, pose interpolation."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from timor_core import InputError, ModuleAssembly
from timor_core.common.transforms import interpolate_poses
from timor_core.kinematics.trajectory import Trajectory, time_parametrize


def test_stationary_segments():
    q = np.array([0.1, -0.2, 0.3])
    two = Trajectory.stationary(1.5, q)
    assert two.t.tolist() == [0.0, 1.5] and np.all(two.q == q) and not two.dq.any() and not two.ddq.any()
    sampled = Trajectory.stationary(1.05, q, dt=0.1)
    assert len(sampled) == 12 and sampled.duration == pytest.approx(1.1)  # rounded up to a whole sample
    assert np.allclose(np.diff(sampled.t), 0.1)
    assert len(Trajectory.stationary(1.0, q, dt=0.1)) == 11
    assert len(Trajectory.stationary(0.0, q)) == 1
    with pytest.raises(InputError):
        Trajectory.stationary(-1.0, q)
    with pytest.raises(InputError):
        Trajectory.stationary(1.0, q, dt=0.0)


def test_add_slice_and_sample_lookup():
    move = time_parametrize([np.zeros(2), np.ones(2)], v_max=1.0, a_max=2.0, dt=0.01)
    rest = Trajectory.stationary(0.5, np.ones(2), dt=0.01)
    both = move + rest
    assert both.duration == pytest.approx(move.duration + 0.5) and len(both) == len(move) + len(rest) - 1
    i = both.sample_index(move.duration)
    assert np.allclose(both.q[i], 1.0)
    with pytest.raises(InputError, match="no sample"):
        both.sample_index(move.duration + 0.005)
    tail = both[i:]
    assert tail.t[0] == 0.0 and tail.duration == pytest.approx(0.5) and np.allclose(tail.q, 1.0)
    assert len(both[3]) == 1 and np.array_equal(both[3].q[0], both.q[3]) and len(both[-1]) == 1
    with pytest.raises(InputError):
        both[::2]
    with pytest.raises(InputError):
        move + Trajectory.stationary(1.0, np.zeros(2))  # does not start where move ends


def test_tcp_poses_along_a_trajectory(robco):
    robot = ModuleAssembly.from_serial_modules(robco, ["base", "J", "L_250", "J", "I_200", "J", "gripper"]).robot
    tr = time_parametrize([np.zeros(3), np.array([0.5, -0.4, 0.3])], v_max=1.0, a_max=2.0, dt=0.05)
    poses = tr.tcp_poses(robot)
    assert poses.shape == (len(tr), 4, 4)
    assert np.allclose(poses[7], robot.fk(tr.q[7]))


def test_pose_interpolation():
    A = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, 0.3), np.array([0.0, 0.0, 0.0])).homogeneous
    B = pin.SE3(pin.rpy.rpyToMatrix(-0.4, 0.5, 2.0), np.array([1.0, -2.0, 0.5])).homogeneous
    poses = interpolate_poses(A, B, 11)
    assert poses.shape == (11, 4, 4) and np.allclose(poses[0], A) and np.allclose(poses[-1], B)
    assert np.allclose(poses[5][:3, 3], (A[:3, 3] + B[:3, 3]) / 2)
    # constant angular steps along one axis: the shortest arc, evenly split
    steps = [pin.log3(poses[k][:3, :3].T @ poses[k + 1][:3, :3]) for k in range(10)]
    assert np.allclose(steps, steps[0]) and np.linalg.norm(steps[0]) * 10 == pytest.approx(
        np.linalg.norm(pin.log3(A[:3, :3].T @ B[:3, :3]))
    )
    for P in poses:
        assert np.allclose(P[:3, :3] @ P[:3, :3].T, np.eye(3))
    with pytest.raises(InputError):
        interpolate_poses(A, B, 1)
