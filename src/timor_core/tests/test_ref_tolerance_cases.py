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


# the reference's tolerance classes, as compositions of projections (their ``default()``: a small region)
TOLERANCE_TYPES = {
    "CartesianXYZ": [("x", (-1e-3, 1e-3)), ("y", (-1e-3, 1e-3)), ("z", (-1e-3, 1e-3))],
    "CartesianCylindrical": [("r_cyl", (0.0, 1e-3)), ("phi_cyl", (-PI, PI)), ("z", (-1e-3, 1e-3))],
    "CartesianSpheric": [("r_sph", (0.0, 1e-3)), ("theta", (0.0, PI)), ("phi_sph", (-PI, PI))],
    "RotationAxis": [("N_x", (-0.01, 0.01)), ("N_y", (-0.01, 0.01)), ("N_z", (-0.01, 0.01))],
    "RotationAbsolute": [("Theta_R", (0.0, 0.01))],
}


@pytest.mark.parametrize("name", sorted(TOLERANCE_TYPES))
def test_tolerance_types(name):
    """ref: test_tolerances.py::test_tolerance_types (reversed bounds refused, t + t == t, a sampled deviation is
    valid, the projection JSON round trips to an equal tolerance)"""
    from timor_core.kinematics.tolerance import tolerance_from_json

    spec = TOLERANCE_TYPES[name]
    tolerance = Composed([ProjectionTolerance(p, iv) for p, iv in spec])
    for p, (low, high) in spec:
        if low != high:
            with pytest.raises(ValueError):  # a ValidationError names the projection
                ProjectionTolerance(p, (high, low))
    assert Composed([tolerance, tolerance]) == tolerance and (tolerance & tolerance) == tolerance
    rng = np.random.default_rng(7)
    for _ in range(20):
        placement = _random_pose(rng)
        assert tolerance.valid(placement, tolerance.sample(placement, rng))
    projections, intervals = tolerance.to_json()
    again = tolerance_from_json(projections, intervals)
    assert again == tolerance and again.to_json() == (projections, intervals)


def test_tolerance_reference_frame():
    """ref: test_tolerances.py::test_tolerance_reference_frame (a narrow drilling cylinder: free about its axis)"""
    rng = np.random.default_rng(3)
    eps = PI / 180
    cylinder = Composed([ProjectionTolerance("r_cyl", (0, 0.1)), ProjectionTolerance("z", (-0.01, 2.5))])
    tolerance = Composed([cylinder, axis((-eps, eps), (-eps, eps), (-PI, PI))])
    desired = rot_x(-PI / 2)
    desired[:3, 3] = (1, 1, 2)
    turns = [rot_z(PI * rng.random()) for _ in range(100)]
    shift = translation((0.01, 0.03, 2))
    for deviation in (*turns, shift, *(shift @ t for t in turns)):
        assert tolerance.valid(desired, desired @ deviation)
    by_hand = np.array([[1, 0, 0, 1], [0, 0, 1, 2.5], [0, -1, 0, 2], [0, 0, 0, 1]], dtype=float)
    assert tolerance.valid(desired, by_hand)
    failing = (translation((1.11, 1, 2)), translation((1.08, 1.08, 2)), desired @ rot_x(0.1), desired @ rot_y(0.1))
    assert not any(tolerance.valid(desired, T) for T in failing)


def test_visualization():
    """ref: test_tolerances.py::test_visualization. The reference only draws the volumes; here each drawn volume
    is checked against the tolerance: its volume equals the allowed region's (Monte Carlo over the bounding box)
    and every valid position lies within its bounds."""
    pytest.importorskip("manifold3d")
    from timor_core.viz.tolerance_volume import tolerance_volume

    def tol(*parts):
        return Composed([ProjectionTolerance(p, iv) for p, iv in parts])

    shapes = {
        "box": tol(("x", (0, 0.7)), ("y", (0, 0.7)), ("z", (0, 0.5))),
        "cylinder": tol(("r_cyl", (0, 0.5)), ("z", (-0.3, 0.3))),
        "sphere": tol(("r_sph", (0, 0.33))),
        "partial_cylinder": tol(("r_cyl", (0, 0.5)), ("z", (-0.1, 0.1)), ("phi_cyl", (PI / 4, PI / 2))),
        "partial_sphere": tol(("r_sph", (0, 0.33)), ("theta", (0, PI / 2)), ("phi_sph", (-PI / 4, PI / 2))),
        "composed": tol(("x", (0, 0.1)), ("y", (0, 0.1)), ("z", (0, 0.1)), ("r_sph", (0, 0.1))),
        "world_slab_and_cylinder": Composed(
            [ProjectionTolerance("x", (-0.03, 0.03), WORLD_FRAME), tol(("r_cyl", (0, 0.05)), ("z", (-0.1, 0.1)))]
        ),
    }
    rng = np.random.default_rng(11)
    nominal = rot_x(0.7) @ rot_z(0.3)
    nominal[:3, 3] = (0.5, -1, 2)
    for name, tolerance in shapes.items():
        mesh = tolerance_volume(tolerance, nominal)
        assert mesh is not None and mesh.is_watertight, name
        low, high = mesh.bounds - 0.01, mesh.bounds + 0.01
        points = rng.uniform(low[0], high[1], (20_000, 3))
        real = np.repeat(nominal[None], len(points), axis=0)
        real[:, :3, 3] = points
        inside = np.array([tolerance.valid(nominal, T) for T in real])
        estimate = inside.mean() * np.prod(high[1] - low[0])
        assert mesh.volume == pytest.approx(estimate, rel=0.05), name
        for _ in range(50):
            p = tolerance.sample(nominal, rng)[:3, 3]
            assert np.all(p >= mesh.bounds[0] - 1e-6) and np.all(p <= mesh.bounds[1] + 1e-6), name
