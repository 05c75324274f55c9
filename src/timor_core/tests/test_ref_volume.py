"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_volume.py (timor-python 1.1.1)
ported to timor_core. The reference's Box/Cylinder/SphereVolume (limits in cartesian, cylindrical or spherical
coordinates) are, in timor_core, position tolerances around a pose (x/y/z, r_cyl/phi_cyl/z, r_sph/theta/phi_sph):
``valid`` answers ``contains`` and ``sample`` draws points inside."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from timor_core.kinematics.tolerance import Composed, ProjectionTolerance

R, DZ = 2.0, 2.0


def _volume(*parts) -> Composed:
    return Composed([ProjectionTolerance(p, iv) for p, iv in parts])


SPHERE = _volume(("r_sph", (0, R)), ("theta", (0, math.pi)), ("phi_sph", (-math.pi, math.pi)))
CYLINDER = _volume(("r_cyl", (0, R)), ("phi_cyl", (-math.pi, math.pi)), ("z", (-DZ, DZ)))
BOX = _volume(("x", (-DZ, DZ)), ("y", (-DZ, DZ)), ("z", (-DZ, DZ)))
HALF_SPHERE = _volume(("r_sph", (0, R)), ("theta", (0, math.pi / 2)), ("phi_sph", (-math.pi, math.pi)))
QUARTER_SPHERE = _volume(("r_sph", (0, R)), ("theta", (0, math.pi / 2)), ("phi_sph", (0, math.pi)))
HALF_CYLINDER = _volume(("r_cyl", (0, R)), ("phi_cyl", (-math.pi, 0)), ("z", (-DZ, DZ)))
THREE_QUARTER_CYLINDER = _volume(("r_cyl", (0, R)), ("phi_cyl", (-math.pi, math.pi / 2)), ("z", (-DZ, DZ)))


def _contains(volume: Composed, p) -> bool:
    T = np.eye(4)
    T[:3, 3] = p
    return volume.valid(np.eye(4), T)


def _sample(volume: Composed, rng) -> np.ndarray:
    return volume.sample(np.eye(4), rng)[:3, 3]


@pytest.mark.xfail(strict=True, raises=AttributeError, reason="missing feature: the measure (m³) of a tolerance region")
def test_actual_volume():
    """ref: test_volume.py::test_actual_volume"""
    assert SPHERE.volume == pytest.approx(4 / 3 * math.pi * R**3)  # type: ignore[attr-defined]


def test_contains():
    """ref: test_volume.py::test_contains"""
    assert _contains(SPHERE, (0, 0, R - 1e-6)) and not _contains(SPHERE, (0, 0, R + 1e-3))
    assert _contains(CYLINDER, (R - 1e-6, 0, DZ)) and not _contains(CYLINDER, (R, R, 0))
    assert _contains(BOX, (DZ, DZ, DZ)) and not _contains(BOX, (DZ + 1e-3, 0, 0))
    assert _contains(HALF_SPHERE, (0, 0, 1)) and not _contains(HALF_SPHERE, (0, 0, -1))
    assert _contains(QUARTER_SPHERE, (0, 1, 0.5)) and not _contains(QUARTER_SPHERE, (0, -1, 0.5))
    assert _contains(HALF_CYLINDER, (0, -1, 0)) and not _contains(HALF_CYLINDER, (0, 1, 0))


@pytest.mark.parametrize("volume", [SPHERE, CYLINDER, BOX, HALF_SPHERE, QUARTER_SPHERE, HALF_CYLINDER])
def test_sample_uniform(volume):
    """ref: test_volume.py::test_sample_uniform (samples lie inside) and ::test_sample_volume_grid"""
    rng = np.random.default_rng(42)
    points = np.array([_sample(volume, rng) for _ in range(300)])
    assert all(_contains(volume, p) for p in points)
    assert np.ptp(points, axis=0).max() > 0.5 * R  # spread over the region, not stuck at a point


def _convex_by_sampling(volume: Composed, rng, n: int = 30, steps: int = 7) -> bool:
    points = [_sample(volume, rng) for _ in range(n)]
    return all(
        _contains(volume, a * s + b * (1 - s))
        for a, b in itertools.combinations(points, 2)
        for s in np.linspace(0, 1, steps)
    )


def test_convexity():
    """ref: test_volume.py::test_convexity"""
    rng = np.random.default_rng(42)
    for convex in (SPHERE, CYLINDER, BOX, HALF_SPHERE, QUARTER_SPHERE, HALF_CYLINDER):
        assert _convex_by_sampling(convex, rng)
    assert not _convex_by_sampling(THREE_QUARTER_CYLINDER, rng, n=60)
