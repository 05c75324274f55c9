"""Search spaces of published experiments, each built purely from generic :class:`SpaceOptions`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError
from timor_core.model.db import ModulesDB
from timor_core.search.spaces.rules import SearchSpaceError, SpaceOptions
from timor_core.search.spaces.space import SerialSpace

__all__ = [
    "science2019_options",
    "science2019_space",
    "paper_exp2_options",
    "paper_exp2_space",
    "PRESETS",
    "load_space",
    "space_source",
]


def science2019_options() -> SpaceOptions:
    """The IMPROV space of Althoff et al., Science Robotics 2019: 32,768 six-DOF robots.

    Base '1', end effector L3 ('12'); L7, L10, L11, PB22 and PB24 unused; three powerballs
    PB21-PB21-PB23 or PB21-PB21-PB21, the first directly after the base; between two powerballs one
    real link (L1, L2, L8, L9) with up to one extension (L4, L5, L6) on each side; after the last
    powerball at most one extension: 2 x 64 x 64 x 4 = 32,768.
    """
    return SpaceOptions(
        dof_min=6,
        dof_max=6,
        bases=("1",),
        end_effectors=("12",),
        exclude=("13", "16", "101", "22", "29"),
        classes={"real": ("4", "5", "14", "15"), "ext": ("6", "7", "8")},
        first_is_joint=True,
        joint_sequences=(("21", "21", "23"), ("21", "21", "21")),
        gap_patterns=(("real",), ("ext", "real"), ("real", "ext"), ("ext", "real", "ext")),
        tail_patterns=((), ("ext",)),
    )


def science2019_space(db: ModulesDB) -> SerialSpace:
    """:func:`science2019_options` on the IMPROV module set ``db``."""
    return SerialSpace(db, science2019_options())


def paper_exp2_options() -> SpaceOptions:
    """Experiment 2 of the Timor paper (robco_like): at most 5 DOF, a joint directly after the base,
    at most one link between two joints and at most one before the end effector: 11 + 11² + ... + 11⁵
    = 177,155 assemblies."""
    return SpaceOptions(
        dof_min=1,
        dof_max=5,
        first_is_joint=True,
        max_links_between_joints=1,
        max_links_after_last_joint=1,
    )


def paper_exp2_space(db: ModulesDB) -> SerialSpace:
    """:func:`paper_exp2_options` on ``db`` (``ModulesDB.from_name("robco_like")``)."""
    return SerialSpace(db, paper_exp2_options())


#: Named spaces for ``load_space`` (and ``timor search --space``).
PRESETS = ("auto", "exp2", "science2019")


def space_source(spec: str | Path) -> Path | None:
    """The file :func:`load_space` reads for ``spec``: None for a preset's name (a file of that name is not read),
    else the path. One rule for the load and for whoever asks which file a command reads (the CLI's check that
    ``-o`` replaces none of its inputs: ``-o auto`` beside a file named ``auto`` replaces no input of
    ``--space auto``)."""
    return None if str(spec) in PRESETS else Path(spec)


def load_space(spec: str | Path | SpaceOptions | dict[str, Any], db: ModulesDB) -> SerialSpace:
    """A search space over ``db`` from a preset name, a JSON file of :class:`SpaceOptions`, a dict, or options.

    Presets: ``exp2`` (:func:`paper_exp2_options`), ``science2019`` (:func:`science2019_options`) and ``auto``
    (science2019 for an IMPROV set, else exp2). A file holds the options' JSON, e.g.
    ``{"dof_max": 3, "modules": ["J", "L_100"], "max_modules": 6}`` (the options must bound the chains' length); its
    errors name the file and option.
    """
    if isinstance(spec, SpaceOptions):
        return SerialSpace(db, spec)
    if isinstance(spec, dict):
        return SerialSpace(db, SpaceOptions.from_json(spec))
    if not isinstance(spec, (str, Path)):
        raise InputError("a search space is a preset name, a JSON file, a dict or SpaceOptions", value=spec)
    path = space_source(spec)
    if path is None:
        name = str(spec)
        if name == "auto":
            name = "science2019" if "improv" in db.name.lower() else "exp2"
        return science2019_space(db) if name == "science2019" else paper_exp2_space(db)
    if path.suffix != ".json" and not path.exists():
        raise InputError(f"unknown search space (presets: {', '.join(PRESETS)}; or a .json file)", value=str(spec))
    data = jf.load_json_file(path)
    try:
        return SerialSpace(db, SpaceOptions.from_json(data))
    except SearchSpaceError as exc:
        raise exc.located(file=path) from None
