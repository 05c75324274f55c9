"""The numbers of a URDF for the importer: each read as a finite float within a documented range before it is used,
each error naming the element's path (the reader adds the file and the link or joint).

Ranges: every number is finite and at most ``URDF_MAX_VALUE`` (10⁹) in magnitude: origins (m, rad), box,
cylinder and sphere sizes (m), masses (kg), inertias (kg·m²), axis components, damping and friction; a mesh scale
factor also at least ``MIN_MESH_SCALE`` (10⁻⁹) in magnitude; joint limits finite (magnitudes from
``URDF_UNLIMITED`` on mean unlimited). With those bounds nothing the import or the model computes from them (mass
sums over ``max_urdf_links`` links, inertias rotated into the link frame, poses chained along a tree) can overflow to
infinity, nor a scaled mesh collapse to zero.

Speed: origins, masses and inertias are read by one conversion and one sum of magnitudes in the common case; only a
doubtful value goes the careful way, which names the attribute.
"""

from __future__ import annotations

import logging
import math
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.errors import FormatError, InputError, TimorError, ValidationError

log = logging.getLogger(__name__)

__all__ = [
    "URDF_MAX_VALUE",
    "MIN_MESH_SCALE",
    "ElementError",
    "floats",
    "number",
    "mass",
    "origin",
    "pose_json",
    "inertia_values",
    "physical_inertia",
]

URDF_MAX_VALUE = 1e9
"""Largest magnitude of a number in a URDF (lengths in m, angles in rad, kg, kg·m², damping, friction)."""
MIN_MESH_SCALE = 1e-9
"""Smallest magnitude of a mesh scale factor (smaller ones would scale vertices to zero)."""

_INERTIA = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_ZERO3 = (0.0, 0.0, 0.0)
_IDENTITY = (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)


class ElementError(TimorError):
    """A value of the element being read is wrong: its reader adds the file and the element's name to the path."""

    def __init__(self, error: type[InputError], message: str, suffix: str, value: Any = ...) -> None:
        super().__init__(message)
        self.error, self.message, self.suffix, self.value = error, message, suffix, value

    def located(self, kind: str, name: str, file: Path | None) -> InputError:
        """The error, at ``kind[@name='name']`` + suffix of ``file``."""
        return self.error(self.message, file=file, path=f"{kind}[@name='{name}']{self.suffix}", value=self.value)


def floats(
    text: str | None, n: int, default: tuple[float, ...], suffix: str, limit: float | None = URDF_MAX_VALUE
) -> tuple[float, ...]:
    """``n`` numbers of an attribute (``default`` if it is missing), each finite and, unless ``limit`` is None, at
    most ``limit`` in magnitude; else an ElementError at ``suffix`` naming the text."""
    if text is None:
        return default
    try:
        values = tuple(map(float, text.split()))
    except ValueError:
        raise ElementError(FormatError, "expected numbers", suffix, text) from None
    if len(values) != n or not all(map(math.isfinite, values)):
        raise ElementError(FormatError, f"expected {n} finite numbers", suffix, text)
    if limit is not None and not sum(map(abs, values)) <= limit and max(map(abs, values)) > limit:
        raise ElementError(ValidationError, f"each number must be at most {limit:g} in magnitude (URDF_MAX_VALUE)",
                           suffix, text)  # fmt: skip
    return values


def number(text: str | None, suffix: str, default: float = 0.0, limit: float | None = URDF_MAX_VALUE) -> float:
    """One number of an attribute (see :func:`floats`)."""
    return floats(text, 1, (default,), suffix, limit)[0]


def mass(text: str | None) -> float:
    """A link's mass: finite, at most ``URDF_MAX_VALUE`` (the sign is the reader's to check)."""
    try:
        value = float(text) if text is not None else 0.0  # the common case: one plain number in range
        if -URDF_MAX_VALUE <= value <= URDF_MAX_VALUE:
            return value
    except ValueError:
        pass
    return number(text, "/inertial/mass@value")


def _pose(roll: float, pitch: float, yaw: float, x: float, y: float, z: float) -> tuple[float, ...]:
    """URDF's pose: Rz(yaw) Ry(pitch) Rx(roll) and the translation, row-major 4x4, in plain floats (numpy's small
    products cost more per link)."""
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return (
        cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr, x,
        sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr, y,
        -sp, cp * sr, cp * cr, z,
        0.0, 0.0, 0.0, 1.0,
    )  # fmt: skip


def origin(element: ET.Element, suffixes: tuple[str, str]) -> tuple[float, ...] | None:
    """The row-major 4x4 pose of an element's ``<origin>``; None for the identity (no origin, or a zero one)."""
    found = element.find("origin")
    if found is None:
        return None
    rpy_text, xyz_text = found.get("rpy"), found.get("xyz")
    rpy_split = rpy_text.split() if rpy_text is not None else ["0", "0", "0"]
    xyz_split = xyz_text.split() if xyz_text is not None else ["0", "0", "0"]
    fast = False  # both attributes in one conversion (the common case); any doubt goes the careful way, which names it
    if len(rpy_split) == 3 and len(xyz_split) == 3:
        try:
            roll, pitch, yaw, x, y, z = map(float, rpy_split + xyz_split)
            fast = abs(roll) + abs(pitch) + abs(yaw) + abs(x) + abs(y) + abs(z) <= URDF_MAX_VALUE  # not NaN either
        except ValueError:
            pass
    if not fast:
        roll, pitch, yaw = floats(rpy_text, 3, _ZERO3, suffixes[0])
        x, y, z = floats(xyz_text, 3, _ZERO3, suffixes[1])
    if not (roll or pitch or yaw):
        if not (x or y or z):
            return None
        return (1.0, 0.0, 0.0, x, 0.0, 1.0, 0.0, y, 0.0, 0.0, 1.0, z, 0.0, 0.0, 0.0, 1.0)
    return _pose(roll, pitch, yaw, x, y, z)


def pose_json(pose: tuple[float, ...] | None) -> list[list[float]]:
    """A row-major 4x4 pose (None: the identity) as CoBRA JSON rows."""
    flat = pose or _IDENTITY
    return [list(flat[k : k + 4]) for k in (0, 4, 8, 12)]


def inertia_values(element: ET.Element | None) -> list[float]:
    """ixx, ixy, ixz, iyy, iyz, izz of an ``<inertia>`` (0 where missing), read in one pass, each in range."""
    if element is None:
        return [0.0] * 6
    get = element.get
    try:
        xx, xy, xz = float(get("ixx", 0.0)), float(get("ixy", 0.0)), float(get("ixz", 0.0))
        yy, yz, zz = float(get("iyy", 0.0)), float(get("iyz", 0.0)), float(get("izz", 0.0))
        if abs(xx) + abs(xy) + abs(xz) + abs(yy) + abs(yz) + abs(zz) <= URDF_MAX_VALUE:  # not NaN nor infinite either
            return [xx, xy, xz, yy, yz, zz]
    except ValueError:
        pass
    return [number(element.get(k), f"/inertial/inertia@{k}") for k in _INERTIA]  # names the bad one


def physical_inertia(inertia: np.ndarray, where: str, file: Path | None) -> np.ndarray:
    """The inertia tensor, its negative eigenvalues (a tensor no body has) set to zero with a warning naming the
    link; Pinocchio takes such a tensor as it is, so the mass matrix then differs from its model of the file."""
    if not inertia[0, 1] and not inertia[0, 2] and not inertia[1, 2] and min(np.diag(inertia)) >= 0:
        return inertia  # diagonal: no eigenvalues to find
    eig, vec = np.linalg.eigh(inertia)
    scale = float(np.abs(inertia).max())
    if eig.min() >= -1e-9 * scale - 1e-12:
        return inertia
    log.warning("%s: %s: inertia is not positive semi-definite (eigenvalues %s); negative ones set to 0",
                file or "<URDF>", where, eig.tolist())  # fmt: skip
    clamped = (vec * np.clip(eig, 0.0, None)) @ vec.T
    return 0.5 * (clamped + clamped.T)  # symmetric to the last bit
