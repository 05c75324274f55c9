"""Scale factors between a joint's units and its CiA 402 drive's units, from the drive's EDS and the profile.

``scale_pos_to_dev`` is drive position units per joint radian (or metre), ``scale_vel_to_dev`` the same for
velocities. The drive's units come from its EDS: 0x60A8/0x60A9 (SI unit position/velocity; absent: encoder
increments, and increments per second), the encoder's increments per motor revolution from the profile's
``encoder_counts`` or else 0x608F; the profile's ``gear_ratio`` is motor revolutions per joint revolution (per
metre). ``scale_pos_to_dev``/``scale_vel_to_dev`` in the profile override both.

The factor group is read as ratios (sub 1 / sub 2): it must leave positions in encoder increments, which every
encoding of 1:1 does: the position factor 0x6093 equal to 1 (2048/2048), or, without 0x6093, the gear ratio 0x6091
equal to the feed constant 0x6092 (1/1 and 1/1, 5308416/5308416 and 1/1), or the feed constant equal to the
encoder increments 0x608F times the gear ratio (feed 2048/1 with 2048 increments per revolution); the velocity
factor 0x6096 equal to 1. A sub-index of 0 counts as not set. Any other factor (a drive that scales positions
itself), or the older dimension indices 0x608A/0x608C set, is refused naming the objects and their values unless
the profile gives both scale factors.
"""

from __future__ import annotations

import math
from fractions import Fraction

from timor_core.errors import InputError
from timor_core.hardware.eds import Eds, SiUnit, si_unit
from timor_core.hardware.profiles import JointDrive

__all__ = ["ratio", "drive_scales"]

_NAMES = {0x608F: "position encoder resolution", 0x6091: "gear ratio", 0x6092: "feed constant",
          0x6093: "position factor", 0x6096: "velocity factor"}  # fmt: skip


def ratio(eds: Eds, index: int) -> Fraction | None:
    """Sub 1 / sub 2 of a CiA 402 ratio object; None when absent, empty or 0 (not set)."""
    num, den = eds.number(index, 1), eds.number(index, 2)
    if not num or not den:
        return None
    return Fraction(num, den)


def _describe(eds: Eds, indices: tuple[int, ...]) -> str:
    return ", ".join(f"0x{i:04X} {_NAMES[i]} {eds.number(i, 1)}/{eds.number(i, 2)}" for i in indices
                     if ratio(eds, i) is not None)  # fmt: skip


def _factor_group(eds: Eds, where: str) -> None:
    """Refuse a factor group that does not leave positions and velocities in increments (module docstring)."""
    position = ratio(eds, 0x6093)
    used: tuple[int, ...]
    if position is not None:
        unity, used = position == 1, (0x6093,)
    else:
        gear, feed, enc = ratio(eds, 0x6091) or 1, ratio(eds, 0x6092) or 1, ratio(eds, 0x608F)
        unity = gear == feed or (enc is not None and enc * gear == feed)
        used = (0x6091, 0x6092, 0x608F) if enc is not None else (0x6091, 0x6092)
    velocity = ratio(eds, 0x6096)
    if velocity is not None and velocity != 1:
        unity, used = False, (*used, 0x6096)
    if not unity:
        values = _describe(eds, used)
        raise InputError(
            f"{eds.path.name}: the drive scales positions itself ({values}: not a factor of 1): give "
            "scale_pos_to_dev and scale_vel_to_dev in the profile",
            file=eds.path,
            path=f"{where}.scale_pos_to_dev",
            value=values,
        )
    for index, name in ((0x608A, "position dimension index"), (0x608C, "velocity dimension index")):
        value = eds.number(index)
        if value and eds.number(0x60A8 if index == 0x608A else 0x60A9) is None:
            raise InputError(
                f"{eds.path.name}: 0x{index:04X} {name} {value} is a unit timor does not convert: give "
                "scale_pos_to_dev and scale_vel_to_dev in the profile",
                file=eds.path,
                path=f"{where}.scale_pos_to_dev",
                value=value,
            )


def _unit(eds: Eds, index: int, velocity: bool, where: str) -> SiUnit | None:
    raw = eds.number(index)
    if raw is None:
        return None
    return si_unit(raw, velocity, f"{where}: {eds.path.name} 0x{index:04X}")


def _per_unit(jd: JointDrive, eds: Eds, unit: SiUnit | None, counts: float | None, what: str, where: str) -> float:
    turns = jd.drive.turns_per_unit(jd.prismatic)
    if unit is None or unit.unit == "increment":
        if counts is None:
            raise InputError(
                f"{what}: the drive counts encoder increments and {eds.path.name} gives none per motor "
                "revolution (0x608F): give encoder_counts in the profile",
                file=eds.path,
                path=f"{where}.encoder_counts",
            )
        value = counts * turns
    elif unit.per_turn is not None:
        value = turns * unit.per_turn
    elif jd.prismatic:
        value = unit.per_metre or 1.0
    else:
        raise InputError(f"{what}: {eds.path.name} gives a length unit for a revolute joint's drive", file=eds.path,
                         path=f"{where}.eds", value=unit.describe())  # fmt: skip
    return value / 10.0**unit.exponent if unit is not None else value


def drive_scales(jd: JointDrive, eds: Eds, where: str) -> tuple[float, float]:
    """``scale_pos_to_dev`` and ``scale_vel_to_dev`` of one joint's drive (module docstring); InputError naming
    the profile field for what the EDS does not allow."""
    d = jd.drive
    if d.scale_pos_to_dev is None or d.scale_vel_to_dev is None:
        _factor_group(eds, where)
    counts: float | None = d.encoder_counts
    if counts is None:
        resolution = ratio(eds, 0x608F)
        counts = float(resolution) if resolution is not None and resolution != 1 else None
    pos_unit = _unit(eds, 0x60A8, False, where)
    vel_unit = _unit(eds, 0x60A9, True, where)
    if d.scale_pos_to_dev is not None:
        pos = d.scale_pos_to_dev
    else:
        pos = _per_unit(jd, eds, pos_unit, counts, "position", where)
    if d.scale_vel_to_dev is not None:
        vel = d.scale_vel_to_dev
    elif vel_unit is None:
        vel = pos  # CiA 402 default: position units per second
    else:
        vel = _per_unit(jd, eds, vel_unit, counts, "velocity", where) * (vel_unit.time_s or 1.0)
    for key, value in (("scale_pos_to_dev", pos), ("scale_vel_to_dev", vel)):
        if not (math.isfinite(value) and 1e-12 <= value <= 1e12):
            raise InputError(
                f"{key} would be {value!r}: check gear_ratio, encoder_counts and the EDS units",
                path=f"{where}.gear_ratio",
                value=d.gear_ratio,
            )
    return pos, vel
