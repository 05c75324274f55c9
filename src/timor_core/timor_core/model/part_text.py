"""A module's bodies and joints as the one-line JSON text of their records, made without the dicts and nested lists
of their ``to_json()``: writing the module set of a 100,000-link URDF spent about 2 s of CPU making and encoding
those (issue 38 item 4). Each text is exactly ``json.dumps(part.to_json())``; a part outside the common shape (extra
fields, a number that is not a finite float, an array of another shape) is written by ``json.dumps`` itself, so the
fast way and the slow way cannot differ (``test_part_text.py`` compares them on every part of the embedded sets, the
imported URDFs and hypothesis-made parts).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from json.encoder import encode_basestring_ascii
from typing import Any

import numpy as np

from timor_core.common.transforms import IDENTITY
from timor_core.model.geometry import Geometry
from timor_core.model.parts import Z_AXIS, Body, Connector, Joint

__all__ = ["body_text", "joint_text", "matrix_text"]

_encode = json.JSONEncoder().encode  # json.dumps(value) with its default options, the encoder made once


def _rows(n: int) -> str:
    row = "[" + ", ".join(["%r"] * n) + "]"
    return "[" + ", ".join([row] * n) + "]"


_FORMATS = {(4, 4): _rows(4), (3, 3): _rows(3)}
_IDENTITY_TEXT = _encode(IDENTITY.tolist())
_SEEN: dict[bytes, str] = {}  # a matrix's or vector's float64 bytes -> its text (bytes: -0.0 is not 0.0 here)
_SEEN_MOST = 4096
"""Texts remembered (then forgotten all at once): a float's shortest repr is up to 1.7 us, and a big URDF repeats
its origins and inertias."""


def _remember(key: bytes, text: str) -> str:
    if len(_SEEN) >= _SEEN_MOST:
        _SEEN.clear()
    _SEEN[key] = text
    return text


def matrix_text(value: Any) -> str:
    """``json.dumps(pose_json(value))``: a pose or an inertia (``np.asarray(value, dtype=float).tolist()``)."""
    if value is IDENTITY:
        return _IDENTITY_TEXT
    matrix = np.asarray(value, dtype=float)
    form = _FORMATS.get(matrix.shape)
    if form is not None:
        key = matrix.tobytes()  # 72 or 128 bytes: the shape is in the length
        text = _SEEN.get(key)
        if text is not None:
            return text
        flat = matrix.ravel().tolist()
        total = sum(flat)
        if total - total == 0.0:  # every entry finite (an infinity or NaN, or a sum too big, makes it NaN)
            return _remember(key, form % tuple(flat))  # %r of a float is what json writes for a finite one
    return _encode(matrix.tolist())


def _number(value: Any) -> str:
    """``json.dumps(value)`` of a number, plainly for a finite float."""
    if type(value) is float and value - value == 0.0:
        return repr(value)
    return _encode(value)


def _vector(values: Any) -> str:
    """``json.dumps([float(v) for v in values])``."""
    if type(values) is np.ndarray and values.shape == (3,) and values.dtype == np.float64:
        key = values.tobytes()  # 24 bytes
        text = _SEEN.get(key)
        if text is not None:
            return text
        x, y, z = values.tolist()
        if x - x + y - y + z - z == 0.0:
            return _remember(key, f"[{x!r}, {y!r}, {z!r}]")
    return _encode([float(v) for v in values])


def _records(parts: tuple[Connector, ...] | tuple[Geometry, ...]) -> str:
    return _encode([p.to_json() for p in parts]) if parts else "[]"


def body_text(body: Body) -> str:
    """``json.dumps(body.to_json())``, made field by field (see the module's docstring)."""
    return _text_or_json(body, _body_fields)


def joint_text(joint: Joint) -> str:
    """``json.dumps(joint.to_json())``, made field by field (see the module's docstring)."""
    return _text_or_json(joint, _joint_fields)


def _text_or_json(part: Body | Joint, fields: Callable[[Any], str | None]) -> str:
    """``fields(part)``, or ``json.dumps(part.to_json())`` where that gives None (a part outside the common shape)
    or raises a TypeError (a name that is not a string)."""
    try:
        text = fields(part)
    except TypeError:
        text = None
    return _encode(part.to_json()) if text is None else text


def _body_fields(body: Body) -> str | None:
    extra = body.extra
    present: Any = ()
    if extra:
        present = extra.get("_present", ())
        if len(extra) != 1 or "_present" not in extra:
            return None
    text = (
        f'{{"ID": {encode_basestring_ascii(body.id)}, "mass": {_number(body.mass)}, "inertia": '
        f'{matrix_text(body.inertia)}, "r_com": {_vector(body.r_com)}, "connectors": {_records(body.connectors)}'
    )
    if body.visual or "visual" in present:
        text += ', "visual": ' + _records(body.visual)
    if body.collision or "collision" in present:
        text += ', "collision": ' + _records(body.collision)
    return text + "}"


def _joint_fields(joint: Joint) -> str | None:
    if joint.extra:
        return None
    text = (
        f'{{"ID": {encode_basestring_ascii(joint.id)}, "parent": {encode_basestring_ascii(joint.parent)}, '
        f'"child": {encode_basestring_ascii(joint.child)}, "type": {encode_basestring_ascii(joint.type)}'
    )
    if joint.passive is not None:
        text += ', "passive": ' + _encode(joint.passive)
    text += f', "poseParent": {matrix_text(joint.pose_parent)}, "poseChild": {matrix_text(joint.pose_child)}'
    if joint.axis != Z_AXIS:
        text += ', "axis": ' + _encode(list(joint.axis))
    if joint.limits_json:
        text += ', "limits": ' + _encode(dict(joint.limits_json))
    if joint.gear_ratio is not None:
        text += ', "gearRatio": ' + _encode(joint.gear_ratio)
    if joint.motor_inertia is not None:
        text += ', "motorInertia": ' + _encode(joint.motor_inertia)
    if joint.friction_coulomb is not None:
        text += ', "frictionCoulomb": ' + _encode(joint.friction_coulomb)
    if joint.friction_viscous is not None:
        text += ', "frictionViscous": ' + _encode(joint.friction_viscous)
    return text + "}"
