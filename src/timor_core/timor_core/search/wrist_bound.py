"""Where the last joint's origin must be for the TCP to reach a goal at its orientation, against where joint 1 lets
it be: a goal refused in microseconds, before the branch and bound of :mod:`.reach_proof` is run.

Status: **not used by the search** (issue 38). Measured on the unseen tasks of ``benchmarks/unseen_tasks.py``:
before the family filter's proofs it refused 25-40 % of the chains proven there (proofs 254 -> 193 on
``moved_goals``) but the search took as long or longer (its refusals give narrower certificates than a widened
proof, so more chains come through); before the GA workspace filter's proof it refused 573 of 4,116 chains, the
same trial in 4 % more CPU. Kept, with its soundness tests, as a tested piece for a proof that needs it (e.g. a
bound over sets of assemblies); ``benchmarks/README.md`` has the figures.

Within a rotation tolerance ``theta`` and position slack ``s`` of the goal ``(g, R_g)`` the wrist ``w = p + R d``
(``d``: the last joint's origin seen from the TCP, :attr:`~.reach_proof.PoseChain.offset`) lies within ``s`` of the
spherical cap ``C = {g + v : |v| = |d|, angle(v, R_g d) <= theta}`` (a turn by at most ``theta`` turns ``d`` by at
most ``theta``). On the chain's side, joint 2's origin moves only with joint 1, on the circle ``K`` about joint 1's
fixed axis, and the wrist lies within ``W`` of it (``W``: the distances between successive joint origins from joint
2 on, each a rigid segment; :attr:`~.reach_proof.PoseChain.wrist_radii`). So if every point of ``C`` is farther than
``W + s`` from ``K``, no configuration reaches the goal. With one joint the wrist is joint 1's origin itself
(``K`` a point, ``W = 0``). The distance of a point to ``K`` is exact in cylindrical coordinates about joint 1's
axis, ``sqrt((rho - r_K)^2 + (z - z_K)^2)``, and 1-Lipschitz; the cap is sampled on a grid of polar and azimuth
angles with a known covering radius ``delta`` (a chord is at most its arc: ``|d| (dphi / 2 + sin(phi_max) dpsi /
2)``), so the least distance over the samples less ``delta`` bounds the cap's from below. Joint limits never
matter: the bound holds over whole turns. Property test: ``tests/test_wrist_bound.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.kinematics.reach import position_slack

__all__ = ["CapSamples", "cap_samples", "wrist_excess"]

EPS = 1e-8  # m: rounding (as reach_proof.EPS)

POLAR, AZIMUTH = 16, 64  # the cap's grid: delta = 0.059 |d| at 45 deg (1-2 cm on robco_like's grippers)


@dataclass(frozen=True)
class CapSamples:
    """The cap's grid points in cylindrical coordinates about joint 1's axis (``rho``, ``z`` from its origin) and
    the grid's covering radius ``delta`` (m): every point of the cap is within ``delta`` of one of them."""

    rho: np.ndarray
    z: np.ndarray
    delta: float


def _cylindrical(points: np.ndarray, origin: np.ndarray, axis: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    v = np.atleast_2d(points) - origin
    z = v @ axis
    rho = np.linalg.norm(v - z[:, None] * axis, axis=1)
    return rho, z


def cap_samples(goal: np.ndarray, offset: np.ndarray, theta: float, origin: np.ndarray, axis: np.ndarray) -> CapSamples:
    """The cap of the module docstring for a goal (4x4), the wrist's ``offset`` from the TCP (TCP frame) and the
    rotation slack ``theta`` (rad), sampled, in cylindrical coordinates about the axis (unit) through ``origin``."""
    g = np.asarray(goal, dtype=float)
    length = float(np.linalg.norm(offset))
    if length == 0.0:
        rho, z = _cylindrical(g[:3, 3], origin, axis)
        return CapSamples(rho, z, 0.0)
    m = g[:3, :3] @ np.asarray(offset, dtype=float) / length
    e1 = np.cross(m, (1.0, 0.0, 0.0) if abs(m[0]) < 0.9 else (0.0, 1.0, 0.0))
    e1 /= np.linalg.norm(e1)
    e2 = np.cross(m, e1)
    theta = min(math.pi, theta)
    phi = np.linspace(0.0, theta, POLAR + 1)[:, None]
    psi = np.linspace(0.0, 2 * math.pi, AZIMUTH, endpoint=False)[None, :]
    dirs = (
        np.cos(phi)[..., None] * m
        + (np.sin(phi) * np.cos(psi))[..., None] * e1
        + (np.sin(phi) * np.sin(psi))[..., None] * e2
    )
    points = g[:3, 3] + length * dirs.reshape(-1, 3)
    widest = math.sin(theta) if theta < math.pi / 2 else 1.0
    delta = length * (theta / POLAR / 2 + widest * math.pi / AZIMUTH)
    rho, z = _cylindrical(points, origin, axis)
    return CapSamples(rho, z, delta)


def wrist_excess(chain: Any, goal: np.ndarray, tolerance: Any, theta: float) -> float:
    """By how much (m) the wrist of ``chain`` (a :class:`~.reach_proof.PoseChain`) stays farther from the goal's
    cap than the position slack allows, at every configuration: > 0 the goal is out of reach (the module
    docstring), <= 0 maybe. ``theta``: the tolerance's rotation slack (rad, rounding allowance included)."""
    origin, axis = chain.origins[0], chain.axes[0]
    samples = cap_samples(goal, chain.offset, theta, origin, axis)
    if chain.dof > 1:
        (r_k,), (z_k,) = _cylindrical(chain.origins[1], origin, axis)
        reach = float(chain.wrist_radii[1])
    else:
        r_k, z_k, reach = 0.0, 0.0, 0.0
    nearest = float(np.sqrt(np.min((samples.rho - r_k) ** 2 + (samples.z - z_k) ** 2)))
    return nearest - samples.delta - reach - position_slack(tolerance) - EPS
