"""The options of a serial search space, and their validation against a module database.

Every domain rule (which bases and tools, how many degrees of freedom, how many links between
joints, which module may follow which, which joint sequences and link patterns are allowed) is an
option of :class:`SpaceOptions`; the enumerator in :mod:`.space` knows no special cases.

Rules that name modules accept *tokens*: a module ID, a class name from ``SpaceOptions.classes``,
or one of the built-in classes ``@base``, ``@eef``, ``@joint`` (a middle module with dof > 0),
``@link`` (a middle module with dof 0) and ``@any`` (every allowed module).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from timor_core.errors import ValidationError
from timor_core.limits import limits
from timor_core.model.db import ModulesDB

__all__ = ["SpaceOptions", "SearchSpaceError", "BUILTIN_CLASSES", "ResolvedRules"]

BUILTIN_CLASSES = ("@base", "@eef", "@joint", "@link", "@any")

Pattern = tuple[str, ...]


class SearchSpaceError(ValidationError):
    """Invalid search-space options (or a resume state that does not belong to the space).

    ``path`` names the option (``$.dof_min``, ``$.gap_patterns[2][0]``, ...), ``value`` the bad value.
    """


def _tuple_of_str(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SearchSpaceError("expected a list of module IDs or class names", path=f"$.{name}", value=value)
    out = tuple(value)
    for k, v in enumerate(out):
        if not isinstance(v, str):
            raise SearchSpaceError("expected a string (module ID or class name)", path=f"$.{name}[{k}]", value=v)
    return out


def _patterns(value: Any, name: str) -> tuple[Pattern, ...]:
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise SearchSpaceError("expected a list of sequences", path=f"$.{name}", value=value)
    return tuple(_tuple_of_str(p, f"{name}[{k}]") for k, p in enumerate(value))


@dataclass(frozen=True)
class SpaceOptions:
    """The rules that define a space of serial assemblies ``(base, m1, ..., mk, end effector)``.

    ``None`` means "no restriction" everywhere. Module-naming options take tokens (module IDs,
    names from ``classes``, or the built-ins ``@base``/``@eef``/``@joint``/``@link``/``@any``).

    Attributes:
        dof_min, dof_max: bounds on the total degrees of freedom (sum of ``module.dof``).
        bases: modules allowed first (default: every module with exactly one base connector).
        end_effectors: modules allowed last (default: every module with an ``eef`` connector).
        modules: middle modules (joints and links) allowed at all (default: all that are neither
            base nor end effector).
        exclude: modules never used (applied after the three options above).
        first_modules: modules allowed directly after the base.
        first_is_joint: the module directly after the base must be a joint.
        max_links_between_joints: at most this many static links (dof-0 middle modules) between two
            neighbouring joints.
        max_links_before_first_joint: ... between the base and the first joint.
        max_links_after_last_joint: ... between the last joint and the end effector.
        max_modules: at most this many modules in total (base and end effector included).
        successors: allowed neighbour pairs ``(a, b)``, "b may follow a"; if given, every
            neighbouring pair of the chain (base and end effector included) must match one.
        joint_sequences: if given, the chain's sequence of joint modules must equal one of these.
        classes: named module classes usable as tokens, e.g. ``{"real": ["4", "5"], "ext": ["6"]}``.
        gap_patterns: if given, the links between two neighbouring joints must match one pattern
            (a sequence of tokens, one per link; ``()`` allows two joints to touch).
        head_patterns: same for the links between the base and the first joint.
        tail_patterns: same for the links between the last joint and the end effector.

    Independently of the options, every neighbouring pair must be joinable in exactly one way
    (as ``ModuleAssembly.from_serial_modules`` requires).
    """

    dof_min: int = 1
    dof_max: int | None = None
    bases: tuple[str, ...] | None = None
    end_effectors: tuple[str, ...] | None = None
    modules: tuple[str, ...] | None = None
    exclude: tuple[str, ...] = ()
    first_modules: tuple[str, ...] | None = None
    first_is_joint: bool = False
    max_links_between_joints: int | None = None
    max_links_before_first_joint: int | None = None
    max_links_after_last_joint: int | None = None
    max_modules: int | None = None
    successors: tuple[tuple[str, str], ...] | None = None
    joint_sequences: tuple[Pattern, ...] | None = None
    classes: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    gap_patterns: tuple[Pattern, ...] | None = None
    head_patterns: tuple[Pattern, ...] | None = None
    tail_patterns: tuple[Pattern, ...] | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("dof_min", "dof_max", *_INT_CAPS):
            v = getattr(self, name)
            if v is None and name != "dof_min":
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise SearchSpaceError("expected an integer", path=f"$.{name}", value=v)
            if v < 0:
                raise SearchSpaceError("must not be negative", path=f"$.{name}", value=v)
            field_limit = "max_dof" if name.startswith("dof") else "max_modules"
            cap = getattr(limits(), field_limit)
            if v > cap:
                raise SearchSpaceError(
                    f"must be at most {cap} (limit {field_limit}; raise it with TIMOR_{field_limit.upper()} or "
                    f"timor_core.limits.set_limits({field_limit}=...))",
                    path=f"$.{name}",
                    value=v,
                )
        if self.dof_max is not None and self.dof_min > self.dof_max:
            raise SearchSpaceError(
                f"dof_min ({self.dof_min}) is larger than dof_max ({self.dof_max})",
                path="$.dof_min",
                value={"dof_min": self.dof_min, "dof_max": self.dof_max},
            )
        if not isinstance(self.first_is_joint, bool):
            raise SearchSpaceError("expected true or false", path="$.first_is_joint", value=self.first_is_joint)
        for name in ("bases", "end_effectors", "modules", "first_modules"):
            if getattr(self, name) is not None:
                set_(self, name, _tuple_of_str(getattr(self, name), name))
        set_(self, "exclude", _tuple_of_str(self.exclude, "exclude"))
        if self.successors is not None:
            pairs = []
            if isinstance(self.successors, str) or not isinstance(self.successors, Iterable):
                raise SearchSpaceError("expected a list of pairs", path="$.successors", value=self.successors)
            for k, p in enumerate(self.successors):
                pair = _tuple_of_str(p, f"successors[{k}]")
                if len(pair) != 2:
                    raise SearchSpaceError("expected a pair (a, b)", path=f"$.successors[{k}]", value=p)
                pairs.append(pair)
            set_(self, "successors", tuple(pairs))
        for name in ("joint_sequences", *_PATTERN_OPTIONS):
            if getattr(self, name) is not None:
                set_(self, name, _patterns(getattr(self, name), name))
        if self.joint_sequences is not None and any(not s for s in self.joint_sequences):
            k = next(i for i, s in enumerate(self.joint_sequences) if not s)
            raise SearchSpaceError("a joint sequence must not be empty", path=f"$.joint_sequences[{k}]", value=())
        if not isinstance(self.classes, Mapping):
            raise SearchSpaceError("expected a mapping name -> module IDs", path="$.classes", value=self.classes)
        classes = {}
        for name, members in self.classes.items():
            if not isinstance(name, str) or not name or name.startswith("@"):
                raise SearchSpaceError(
                    "class names must be non-empty and not start with '@'", path="$.classes", value=name
                )
            classes[name] = _tuple_of_str(members, f"classes.{name}")
        set_(self, "classes", classes)

    # -- JSON (also the basis of the space's fingerprint) ------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict of the options that differ from the defaults."""
        out: dict[str, Any] = {}
        default = SpaceOptions()
        for f in fields(self):
            v = getattr(self, f.name)
            if v == getattr(default, f.name):
                continue
            if f.name == "classes":
                out[f.name] = {k: list(vs) for k, vs in sorted(v.items())}
            elif isinstance(v, tuple):
                out[f.name] = [list(x) if isinstance(x, tuple) else x for x in v]
            else:
                out[f.name] = v
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SpaceOptions:
        """The inverse of :meth:`to_json` (unknown keys raise SearchSpaceError)."""
        if not isinstance(data, Mapping):
            raise SearchSpaceError("expected an object of search-space options", path="$", value=data)
        names = {f.name for f in fields(cls)}
        for key in data:
            if key not in names:
                raise SearchSpaceError(
                    f"unknown option (known: {', '.join(sorted(names))})", path=f"$.{key}", value=key
                )
        return cls(**dict(data))

    def canonical_json(self) -> str:
        """Compact, key-sorted JSON of :meth:`to_json`."""
        return json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))


_INT_CAPS = ("max_links_between_joints", "max_links_before_first_joint", "max_links_after_last_joint", "max_modules")
_PATTERN_OPTIONS = ("gap_patterns", "head_patterns", "tail_patterns")


@dataclass(frozen=True)
class ResolvedRules:
    """Options checked against a DB, with every token expanded to module IDs (internal)."""

    bases: tuple[str, ...]
    end_effectors: tuple[str, ...]
    middle: tuple[str, ...]  # allowed joints and links, in DB order
    joints: frozenset[str]
    first_modules: frozenset[str] | None
    successors: frozenset[tuple[str, str]] | None
    joint_sequences: tuple[tuple[frozenset[str], ...], ...] | None
    gap_patterns: tuple[tuple[frozenset[str], ...], ...] | None
    head_patterns: tuple[tuple[frozenset[str], ...], ...] | None
    tail_patterns: tuple[tuple[frozenset[str], ...], ...] | None


PatternSets = tuple[tuple[frozenset[str], ...], ...]


def _checked_ids(db: ModulesDB, known: set[str], values: Sequence[str], name: str) -> list[str]:
    """``values`` as a list, after checking that each is a module ID of ``db``."""
    for k, v in enumerate(values):
        if v not in known:
            raise SearchSpaceError(
                f"unknown module ID in module set {db.name!r} (IDs: {', '.join(db.ids)})",
                path=f"$.{name}[{k}]",
                value=v,
            )
    return list(values)


def _resolve_bases(db: ModulesDB, opt: SpaceOptions, known: set[str], excluded: set[str]) -> list[str]:
    """The allowed base modules, in DB order (default: every module with exactly one base connector)."""
    if opt.bases is None:
        return [m.id for m in db if len(m.base_connectors) == 1 and m.id not in excluded]
    bases = _checked_ids(db, known, opt.bases, "bases")
    for k, b in enumerate(bases):
        if len(db[b].base_connectors) != 1:
            raise SearchSpaceError(
                f"module is not a base (it has {len(db[b].base_connectors)} base connectors, needs exactly one)",
                path=f"$.bases[{k}]",
                value=b,
            )
    return [b for b in db.ids if b in set(bases) and b not in excluded]


def _resolve_eefs(db: ModulesDB, opt: SpaceOptions, known: set[str], excluded: set[str]) -> list[str]:
    """The allowed end effectors, in DB order (default: every non-base module with an ``eef`` connector)."""
    if opt.end_effectors is None:
        return [m.id for m in db if m.is_end_effector and not m.is_base and m.id not in excluded]
    eefs = _checked_ids(db, known, opt.end_effectors, "end_effectors")
    for k, e in enumerate(eefs):
        if not db[e].is_end_effector:
            raise SearchSpaceError("module has no 'eef' connector", path=f"$.end_effectors[{k}]", value=e)
    return [e for e in db.ids if e in set(eefs) and e not in excluded]


def _resolve_middle(db: ModulesDB, opt: SpaceOptions, known: set[str], excluded: set[str]) -> tuple[str, ...]:
    """The allowed middle modules (joints and links), in DB order."""
    middle_all = [m.id for m in db if not (m.is_base or m.is_end_effector)]
    allowed = set(middle_all) if opt.modules is None else set(_checked_ids(db, known, opt.modules, "modules"))
    for k, m in enumerate(opt.modules or ()):
        if m not in middle_all:
            raise SearchSpaceError("a base or end effector cannot be a middle module", path=f"$.modules[{k}]", value=m)
    return tuple(m for m in middle_all if m in allowed and m not in excluded)


@dataclass(frozen=True)
class _Tokens:
    """Expands rule tokens (module ID, class name, built-in class) to the allowed module IDs they name."""

    opt: SpaceOptions
    known: set[str]
    every: frozenset[str]
    builtin: dict[str, frozenset[str]]

    def expand(self, t: str, path: str) -> frozenset[str]:
        if t in self.builtin:
            return self.builtin[t]
        if t in self.opt.classes:
            return frozenset(self.opt.classes[t]) & self.every
        if t in self.known:
            return frozenset((t,)) & self.every
        raise SearchSpaceError(
            "unknown token: neither a module ID, a class from $.classes, nor one of " + ", ".join(BUILTIN_CLASSES),
            path=path,
            value=t,
        )

    def union(self, values: Sequence[str] | None, name: str) -> frozenset[str] | None:
        if values is None:
            return None
        return frozenset().union(*(self.expand(t, f"$.{name}[{k}]") for k, t in enumerate(values)))

    def patterns(self, name: str, must: frozenset[str], what: str) -> PatternSets | None:
        """Option ``name`` (a list of token sequences) expanded; every token must name only ``must``."""
        value = getattr(self.opt, name)
        if value is None:
            return None
        out = []
        for i, p in enumerate(value):
            seq = []
            for k, t in enumerate(p):
                s = self.expand(t, f"$.{name}[{i}][{k}]")
                bad = s - must
                if bad:
                    raise SearchSpaceError(
                        f"{name} may only name {what}; {', '.join(sorted(bad))} is not one",
                        path=f"$.{name}[{i}][{k}]",
                        value=t,
                    )
                seq.append(s)
            out.append(tuple(seq))
        return tuple(out)

    def successors(self) -> frozenset[tuple[str, str]] | None:
        if self.opt.successors is None:
            return None
        pairs: set[tuple[str, str]] = set()
        for k, (a, b) in enumerate(self.opt.successors):
            sa, sb = self.expand(a, f"$.successors[{k}][0]"), self.expand(b, f"$.successors[{k}][1]")
            pairs.update((x, y) for x in sa for y in sb)
        return frozenset(pairs)


def resolve(db: ModulesDB, opt: SpaceOptions) -> ResolvedRules:
    """Check every module ID and token of ``opt`` against ``db``; raise SearchSpaceError on the first problem."""
    known = set(db.ids)
    for name in opt.classes:
        if name in known:
            raise SearchSpaceError("class name is also a module ID; rename the class", path="$.classes", value=name)
    for name, members in opt.classes.items():
        _checked_ids(db, known, members, f"classes.{name}")
    excluded = set(_checked_ids(db, known, opt.exclude, "exclude"))
    bases = _resolve_bases(db, opt, known, excluded)
    eefs = _resolve_eefs(db, opt, known, excluded)
    if not bases:
        raise SearchSpaceError(
            f"module set {db.name!r} has no usable base module (one with exactly one 'base' connector)",
            path="$.bases",
            value=opt.bases,
        )
    if not eefs:
        raise SearchSpaceError(
            f"module set {db.name!r} has no usable end effector (a module with an 'eef' connector)",
            path="$.end_effectors",
            value=opt.end_effectors,
        )
    middle = _resolve_middle(db, opt, known, excluded)
    joints = frozenset(m for m in middle if db[m].dof > 0)
    links = frozenset(m for m in middle if db[m].dof == 0)
    every = frozenset((*bases, *eefs, *middle))
    builtin = {"@base": frozenset(bases), "@eef": frozenset(eefs), "@joint": joints, "@link": links, "@any": every}
    tokens = _Tokens(opt, known, every, builtin)
    successors = tokens.successors()
    return ResolvedRules(
        bases=tuple(bases),
        end_effectors=tuple(eefs),
        middle=middle,
        joints=joints,
        first_modules=tokens.union(opt.first_modules, "first_modules"),
        successors=successors,
        joint_sequences=tokens.patterns("joint_sequences", joints, "joint modules"),
        gap_patterns=tokens.patterns("gap_patterns", links, "links (dof-0 middle modules)"),
        head_patterns=tokens.patterns("head_patterns", links, "links (dof-0 middle modules)"),
        tail_patterns=tokens.patterns("tail_patterns", links, "links (dof-0 middle modules)"),
    )
