"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_tolerances.py (timor-python 1.1.1)
ported to timor_core. The reference's CartesianXYZ, RotationAxis and RotationAbsolute are compositions of the
CoBRA projections x/y/z, N_x/N_y/N_z and Theta_R (``timor_core.kinematics.tolerance``)."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from timor_core.common.transforms import rot_x, rot_y, rot_z, translation
from timor_core.kinematics.tolerance import Composed, ProjectionTolerance
from timor_core.kinematics.tolerance_base import WORLD_FRAME

PI = math.pi


def xyz(x, y, z) -> Composed:
    return Composed([ProjectionTolerance("x", x), ProjectionTolerance("y", y), ProjectionTolerance("z", z)])


def axis(n_x, n_y, n_z, frame=None) -> Composed:
    extra = {"frame": frame} if frame is not None else {}
    return Composed([ProjectionTolerance(p, iv, **extra) for p, iv in (("N_x", n_x), ("N_y", n_y), ("N_z", n_z))])


def absolute(angle) -> ProjectionTolerance:
    return ProjectionTolerance("Theta_R", (0.0, angle))


def _rotation(axis_vector, angle) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.exp3(np.asarray(axis_vector, dtype=float) / np.linalg.norm(axis_vector) * angle)
    return T


def _random_pose(rng) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.exp3(rng.normal(size=3))
    T[:3, 3] = rng.uniform(-1, 1, 3)
    return T


def test_asymmetric_spatial_tolerances():
    """ref: test_tolerances.py::test_asymmetric_spatial_tolerances"""
    rng = np.random.default_rng(0)
    tolerance = Composed([xyz((-0.5, 0), (-1, 0.5), (-0.35, 100)), axis((-PI / 10, PI), (-PI / 2, PI / 2),
                                                                          (-PI, PI / 10))])  # fmt: skip
    valid = (translation((-0.4, 0, 0)), translation((0, 0, 99)), rot_z(PI / 11), rot_z(-PI / 2), rot_y(PI / 3),
             rot_x(0.3 * PI) @ rot_x(0.1 * PI))  # fmt: skip
    invalid = (
        translation((0.4, 0, 0)),
        translation((0, 0, -1)),
        rot_z(0.9 * PI),
        _rotation((-math.sqrt(0.5), math.sqrt(0.5), 0), 1.0),
        _rotation((-0.5, 0, -math.sqrt(0.75)), 1.0),
    )
    for _ in range(5):
        desired = _random_pose(rng)
        assert all(tolerance.valid(desired, desired @ offset) for offset in valid)
        assert not any(tolerance.valid(desired, desired @ offset) for offset in invalid)


def test_rotation_tolerance_edge_cases():
    """ref: test_tolerances.py::test_rotation_tolerance_edge_cases"""
    rng = np.random.default_rng(1)
    desired = _random_pose(rng)
    shifted = desired @ translation(rng.random(3))
    allow_angles, allow_axes = absolute(PI), axis((-PI, PI), (-PI, PI), (-PI, PI))
    none_angles, none_axes = absolute(0.0), axis((0, 0), (0, 0), (0, 0))
    everything = Composed([allow_angles, allow_axes, none_angles, none_axes])
    for tol in (allow_angles, allow_axes, none_angles, none_axes, everything):
        assert tol.valid(desired, desired) and tol.valid(desired, shifted)
    for _ in range(100):
        rotated = desired @ _random_pose(rng) @ translation((0, 0, 0))
        rotated[:3, 3] = desired[:3, 3]
        assert allow_angles.valid(desired, rotated) and allow_axes.valid(desired, rotated)
        assert not none_angles.valid(desired, rotated) and not none_axes.valid(desired, rotated)
        assert not everything.valid(desired, rotated)
    in_plane = axis((-PI, PI), (-PI, PI), (0, 0))
    for _ in range(100):
        a = float(rng.random())
        assert in_plane.valid(desired, desired @ rot_x(a)) and in_plane.valid(desired, desired @ rot_y(a))
        assert not in_plane.valid(desired, desired @ rot_z(a))


def test_rotation_tolerance_use_cases():
    """ref: test_tolerances.py::test_rotation_tolerance_use_cases"""
    rng = np.random.default_rng(2)
    one, half, five = PI / 180, PI / 360, PI / 36
    accurate = absolute(one)
    drilling = axis((-one, one), (-one, one), (-1, 1))
    surgery = axis((0, 0), (0, 0), (-1, 1))
    avoid_roll = axis((-one, one), (-1, 1), (-1, 1), frame=WORLD_FRAME)
    desired = _random_pose(rng)
    direction = np.cross(rng.random(3), (0, 0, 1))  # never a pure z rotation
    half_away, five_away = desired @ _rotation(direction, half), desired @ _rotation(direction, five)
    five_x, five_z = desired @ rot_x(five), desired @ rot_z(five)
    assert accurate.valid(desired, half_away) and not accurate.valid(desired, five_away)
    assert drilling.valid(desired, half_away) and drilling.valid(desired, five_z)
    assert not drilling.valid(desired, five_away) and not drilling.valid(desired, five_x)
    assert surgery.valid(desired, five_z) and not surgery.valid(desired, half_away)
    assert avoid_roll.valid(desired, rot_z(five) @ desired) and not avoid_roll.valid(desired, rot_x(five) @ desired)
    xz = desired @ rot_x(five) @ rot_z(five)
    assert not absolute(five).valid(desired, xz)
    assert axis((-five, five), (-five, five), (-five, five)).valid(desired, xz)


def test_tolerance_combinations():
    """ref: test_tolerances.py::test_tolerance_combinations (intersections; malformed bounds refused)"""
    large = xyz((-0.5, 0.5), (-1, 1), (-0.35, 0.35))
    medium = xyz((-0.4, 0.4), (-0.75, 0.75), (-0.5, 0.5))
    both = Composed([large, medium])
    desired = np.eye(4)
    assert both.valid(desired, translation((0.39, 0.7, 0.3)))
    assert not both.valid(desired, translation((0.45, 0, 0))) and not both.valid(desired, translation((0, 0, 0.4)))
    for bad in (0.3, (0.3,), (0.5, -0.5)):
        with pytest.raises((TypeError, ValueError)):  # a typed FormatError (a ValueError) or a TypeError
            ProjectionTolerance("x", bad)  # type: ignore[arg-type]
