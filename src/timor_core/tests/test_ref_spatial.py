"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_transformations.py,
tests/test_spatial_projections.py and tests/test_custom_types.py (timor-python 1.1.1) ported to timor_core.

timor_core works on plain 4x4 numpy arrays (``timor_core.common.transforms``) instead of a Transformation class;
the deviation projections live in ``timor_core.kinematics.tolerance_base``. Deliberate differences are marked,
missing utilities are strict xfails.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.common.transforms import from_rpy, interpolate_poses, inv, rot_x, rot_y, rot_z, rpy, translation
from timor_core.kinematics.tolerance_base import Deviation, ToleranceFrame, exp3, log3, projection_value, skew

angles = st.floats(-math.pi, math.pi)


def _random_pose(rng: np.random.Generator) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.exp3(rng.uniform(-math.pi, math.pi, 3) * 0.57)
    T[:3, 3] = rng.uniform(-2, 2, 3)
    return T


def test_inverse_and_products():
    """ref: test_transformations.py::test_magic_methods_and_properties and ::test_multiplication"""
    rng = np.random.default_rng(0)
    for _ in range(20):
        T = _random_pose(rng)
        np.testing.assert_allclose(inv(inv(T)), T, atol=1e-12)
        np.testing.assert_allclose(T @ inv(T), np.eye(4), atol=1e-12)
        split = translation(T[:3, 3])
        split[:3, :3] = T[:3, :3]
        np.testing.assert_allclose(split, T)
    chain = [_random_pose(rng) for _ in range(10)]
    np.testing.assert_allclose(np.linalg.multi_dot(chain), _product(chain), atol=1e-9)


def _product(poses):
    out = np.eye(4)
    for T in poses:
        out = out @ T
    return out


@pytest.mark.xfail(
    strict=True,
    raises=AttributeError,
    reason="missing feature: a distance / norm of two poses (use a tolerance instead)",
)
def test_transformation_distance():
    """ref: test_transformations.py::test_transformation_distance and ::test_transformation_norm"""
    from timor_core.common import transforms

    transforms.distance(np.eye(4), np.eye(4))  # type: ignore[attr-defined]


def test_transformation_interpolate():
    """ref: test_transformations.py::test_transformation_interpolate"""
    end_trans, end_rot = translation((1, 1, 1)), rot_x(math.pi / 2)
    for k, a in enumerate(np.linspace(0, 1, 11)):
        np.testing.assert_allclose(interpolate_poses(np.eye(4), end_trans, 11)[k], translation((a, a, a)), atol=1e-12)
        np.testing.assert_allclose(interpolate_poses(np.eye(4), end_rot, 11)[k], rot_x(a * math.pi / 2), atol=1e-12)


@pytest.mark.xfail(
    strict=True,
    raises=AttributeError,
    reason="missing feature: extended DH parameters (a, alpha, delta, p, n) to a pose",
)
def test_dh_extended_to_homogeneous():
    """ref: test_spatial_projections.py::test_dh_extended_to_homogeneous"""
    from timor_core.common import transforms

    transforms.dh_extended_to_homogeneous(a=1)  # type: ignore[attr-defined]


@settings(max_examples=50, deadline=None)
@given(angles, angles, angles)
def test_euler(roll, pitch, yaw):
    """ref: test_spatial_projections.py::test_euler"""
    # deliberate difference: only the URDF convention (roll, pitch, yaw about fixed x, y, z) is offered
    R = from_rpy(roll, pitch, yaw)
    np.testing.assert_allclose(from_rpy(*rpy(R[:3, :3])), R, atol=1e-9)


def test_projections():
    """ref: test_spatial_projections.py::test_projections (cartesian <-> spherical / cylindrical, rotation <->
    axis-angle are inverse)"""
    rng = np.random.default_rng(1)
    for _ in range(100):
        T = _random_pose(rng)
        e = T[:3, 3]
        r, theta = np.linalg.norm(e), projection_value("theta", e)
        phi = projection_value("phi_sph", e)
        back = r * np.array([math.sin(theta) * math.cos(phi), math.sin(theta) * math.sin(phi), math.cos(theta)])
        np.testing.assert_allclose(back, e, atol=1e-9)
        rho, phi_c = projection_value("r_cyl", e), projection_value("phi_cyl", e)
        np.testing.assert_allclose([rho * math.cos(phi_c), rho * math.sin(phi_c), e[2]], e, atol=1e-9)
        w, angle = log3(T[:3, :3])
        np.testing.assert_allclose(exp3(w), T[:3, :3], atol=1e-9)
        assert angle == pytest.approx(np.linalg.norm(w))


def test_advanced_projections():
    """ref: test_spatial_projections.py::test_advanced_projections (the rotation vector of a relative pose)"""
    rng = np.random.default_rng(2)
    for _ in range(50):
        D, R = _random_pose(rng), _random_pose(rng)
        _, position, rotation = Deviation(D, R).in_frame(ToleranceFrame("nominal"))
        relative = inv(D) @ R
        np.testing.assert_allclose(position, relative[:3, 3], atol=1e-9)
        np.testing.assert_allclose(exp3(rotation), relative[:3, :3], atol=1e-9)
    np.testing.assert_array_equal(exp3(np.zeros(3)), np.eye(3))


def test_rotations():
    """ref: test_spatial_projections.py::test_rotations"""
    rng = np.random.default_rng(3)
    for _ in range(100):
        a, b, c = rng.uniform(-math.pi, math.pi, 3)
        R = _random_pose(rng)
        back = R @ rot_x(a) @ rot_x(-a) @ rot_y(b) @ rot_y(-b) @ rot_z(c) @ rot_z(-c)
        np.testing.assert_allclose(back, R, atol=1e-12)


@pytest.mark.xfail(
    strict=True, raises=AttributeError, reason="missing feature: mapping joint angles into bounds by multiples of 2 pi"
)
def test_rotation_mapping():
    """ref: test_spatial_projections.py::test_rotation_mapping"""
    from timor_core.common import transforms

    transforms.rotation_in_bounds(np.zeros(1), np.zeros((2, 1)))  # type: ignore[attr-defined]


def test_skew_vector():
    """ref: test_spatial_projections.py::test_skew_vector"""
    rng = np.random.default_rng(4)
    for _ in range(100):
        w, v = rng.normal(size=3), rng.normal(size=3)
        S = skew(w)
        np.testing.assert_allclose(S, -S.T)
        np.testing.assert_allclose(S @ v, np.cross(w, v), atol=1e-12)


def test_custom_types():
    """ref: test_custom_types.py (EternalDict, LexicographicValues, LimitedSizeMap, Singleton, SingleSet,
    StronglyTypedHeader, timeout)"""
    pytest.skip("not applicable: internal helper types of the reference; timor_core uses dataclasses and the stdlib")
