"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_trajectory.py (timor-python 1.1.1)
ported to timor_core.

timor_core's Trajectory is a timed joint-space trajectory (t, q, dq, ddq), read-only; goal times live on the
Solution (``goal_times``, CoBRA ``goal2time``) and pose paths are arrays of 4x4 poses. Deliberate differences
are marked; what timor_core lacks is a strict xfail.
"""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pytest

from timor_core import FormatError, InputError, ModuleAssembly
from timor_core.common.transforms import interpolate_poses, rot_x, rot_y, translation
from timor_core.kinematics.trajectory import Trajectory


def test_trajectory():
    """ref: test_trajectory.py::test_Trajectory"""
    rng = np.random.default_rng(0)
    t = np.linspace(0, 1, 1001)
    q = rng.random((1001, 6))
    # deliberate difference: velocities and accelerations are computed when the trajectory is made (not lazily)
    traj = Trajectory.from_positions(t, q)
    assert traj.t.size == t.size and traj.q.shape == traj.dq.shape == traj.ddq.shape
    np.testing.assert_allclose(traj.dq, np.gradient(q, t, axis=0))
    assert Trajectory.from_json(traj.to_json()) == traj
    same = Trajectory.from_positions(1 / 1000, q.tolist())  # a time step and a list work too
    np.testing.assert_allclose(same.t, t) and np.testing.assert_array_equal(same.q, q)
    assert same[0].t[0] == 0.0 and np.array_equal(same[:].q, q)
    with pytest.raises(FormatError):  # time must increase
        Trajectory.from_positions(np.asarray((1.0, 3.0, 2.0)), rng.random((3, 3)))
    with pytest.raises(FormatError):
        Trajectory.from_positions(t * 0, q)
    with pytest.raises(TypeError):
        Trajectory()  # type: ignore[call-arg]
    with pytest.raises(IndexError):
        traj.q[len(t)]  # deliberate difference: indexing a trajectory past its end is an IndexError of its arrays
    rest = Trajectory.stationary(1.0, q[0], dt=0.001)
    doubled = rest + rest
    assert len(doubled) == 2 * len(rest) - 1  # deliberate difference: the shared sample is not repeated
    with pytest.raises(InputError, match="does not start at"):  # the second must start where the first ends
        traj + rest


def test_stationary():
    """ref: test_trajectory.py::test_stationary"""
    q = np.random.default_rng(1).random(4)
    plain = Trajectory.stationary(1.0, q)
    tight = Trajectory.stationary(1.0, q, dt=0.07)
    assert len(plain) == 2 and len(tight) > len(plain)
    for tr in (plain, tight):
        assert tr.t[0] == 0.0 and 1.0 <= tr.t[-1] <= 1.0 + 0.07
        assert np.all(tr.q == q) and not tr.dq.any() and not tr.ddq.any()


@pytest.mark.xfail(
    strict=True, raises=TypeError, reason="missing feature: untimed trajectories (positions without times)"
)
def test_untimed():
    """ref: test_trajectory.py::test_untimed"""
    Trajectory(q=np.random.default_rng(2).random((100, 1)))  # type: ignore[call-arg]


def test_scalar_t():
    """ref: test_trajectory.py::test_scalar_t"""
    q = np.random.default_rng(3).random(100)
    tr = Trajectory.from_positions(0.1, q)
    assert tr.q.shape == (100, 1) and tr.t.shape == (100,)
    assert tr.t[0] == 0.0 and tr.t[-1] == pytest.approx(99 * 0.1)


def test_deepcopy():
    """ref: test_trajectory.py::test_deepcopy"""
    q = np.random.default_rng(4).random((100, 1))
    traj = Trajectory(np.arange(100.0), q, q, q)
    again = copy.deepcopy(traj)
    assert again == traj and again is not traj
    # deliberate difference: trajectories are read-only, so a copy can never be changed behind one's back
    with pytest.raises(ValueError):
        again.ddq[-1] += 1


@pytest.mark.xfail(
    strict=True, raises=TypeError, reason="missing feature: trajectories of tolerated poses (use lists of poses)"
)
def test_pose_trajectory():
    """ref: test_trajectory.py::test_PoseTrajectory"""
    Trajectory(pose=np.eye(4)[None])  # type: ignore[call-arg]


def test_pose_interpolation_trajectory():
    """ref: test_trajectory.py::test_pose_interpolation_trajectory"""
    poses = [
        translation((1, 2, 3)),
        translation((2, 3, 4)),
        rot_x(math.pi / 2),
        rot_x(math.pi / 2) @ rot_y(math.pi / 2),
        rot_y(math.pi / 2) @ rot_x(math.pi / 2),
    ]
    for steps in range(1, 5):
        for A, B in itertools.permutations(poses, 2):
            path = interpolate_poses(A, B, 11 * steps)
            assert len(path) == 11 * steps
            np.testing.assert_allclose(path[0], A, atol=1e-12)
            np.testing.assert_allclose(path[-1], B, atol=1e-12)
    with pytest.raises(InputError):
        interpolate_poses(poses[0], poses[1], 1)


def test_fk_ik_trajectory(robco):
    """ref: test_trajectory.py::test_fk_ik_trajectory (IK along an interpolated path, each seeded with the last)"""
    robot = ModuleAssembly.from_serial_modules(
        robco, ["base", "J", "L_250", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"]
    ).robot
    rng = np.random.default_rng(5)
    fails = 0
    for k in range(5):
        q = robot.random_configuration(rng)
        start = robot.fk(q)
        path = interpolate_poses(start, start @ translation((0, 0, 0.1)), 20)
        q_prev, solutions = q, []
        for T in path:
            q_prev, ok = robot.ik(T, q_init=q_prev, rng=k, ignore_self_collision=True)
            if not ok:
                fails += 1
                break
            solutions.append(q_prev)
        else:
            for T, qs in zip(path, solutions):
                assert np.allclose(robot.fk(qs)[:3, 3], T[:3, 3], atol=2e-4)
    assert fails < 5
