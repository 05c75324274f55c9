"""ModulesDB: a set of modules in the CoBRA ``modules.json`` format, with its mesh folder.

Everything derived from the modules (possible connections, oriented trees, URDF fragments, collision
shapes) is cached on the DB and its modules, because modules never change after loading.
"""

from __future__ import annotations

import difflib
import filecmp
import hashlib
import itertools
import os
from collections.abc import Iterable, Iterator
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timor_core.common import jsonfields as jf
from timor_core.common.fileio import atomic_copy, atomic_write_chunks
from timor_core.common.gc_pause import paused_gc
from timor_core.common.json_text import json_chunks, json_text
from timor_core.common.path_memo import resolving_paths
from timor_core.errors import InputError, UnknownModuleError, ValidationError, short_repr
from timor_core.model.db_lookup import ModuleLookups
from timor_core.model.geometry import Mesh
from timor_core.model.module import LIMIT_KEYS, Connector, Module, connectors_compatible

if TYPE_CHECKING:
    import networkx as nx

__all__ = ["ModulesDB", "SetJson", "IGNORE_COLLISION_MODES", "embedded_db_names", "db_source"]

IGNORE_COLLISION_MODES = ("rigid", "via_joint", "rigid_via_joint")
_ALIASES = {
    "geometric_primitives": "geometric_primitive_modules",
    "robco": "robco_like",
}


def embedded_db_names() -> list[str]:
    """Names of the module sets shipped inside the package (for ``ModulesDB.from_name``)."""
    from importlib import resources  # here: 5-15 ms of a cold start that reads a set from a file

    root = resources.files("timor_core") / "data"
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "modules.json").is_file())


def db_source(name_or_file: str | Path) -> Path | None:
    """The file :meth:`ModulesDB.load` reads for ``name_or_file``: a ``modules.json`` (the one given, or the one in
    the folder given; where it is missing the load says so), or None for an embedded set's name (a file or folder of
    that name wins). One rule for the load and for whoever asks which file a command reads (the CLI's check that
    ``-o`` replaces none of its inputs). Neither: UnknownModuleError naming the embedded sets (the closest first)."""
    text, given = str(name_or_file), Path(name_or_file)
    p = given / "modules.json" if given.is_dir() else given
    embedded = _ALIASES.get(text, text) in embedded_db_names()
    if p.is_file() or text.endswith(".json") or os.sep in text:
        return p
    if given.is_dir() and not embedded:  # a folder without modules.json: '<folder>/modules.json: file not found'
        return p
    if embedded:
        return None
    names = embedded_db_names()
    raise UnknownModuleError(  # a typo of either
        f"{short_repr(text)} is neither an embedded module set ({', '.join(names)}) nor a modules.json or a folder "
        f"holding one (none of that name in {Path.cwd()}){_did_you_mean(text, [*names, *_set_folders()])}"
    )


def _did_you_mean(text: str, names: list[str]) -> str:
    """``; did you mean 'robco_like'?`` for the one of ``names`` or of the embedded sets' aliases closest to a
    misspelt ``text`` (an alias named as its set), or nothing."""
    close = difflib.get_close_matches(text, [*names, *_ALIASES], n=1, cutoff=0.6)
    return f"; did you mean {_ALIASES.get(close[0], close[0])!r}?" if close else ""


def _set_folders(limit: int = 1000) -> list[str]:
    """The folders of the current one that hold a modules.json (of its first ``limit`` entries: a typo's hint)."""
    try:
        with os.scandir(".") as entries:
            return [e.name for e in itertools.islice(entries, limit) if (Path(e.path) / "modules.json").is_file()]
    except OSError:
        return []


def _canonical(data: dict) -> list:
    """The modules of a set's JSON with optional fields at their default left out, for comparing sets."""
    modules = []
    for module in data.get("modules", []):
        m = dict(module)
        m["bodies"] = [
            {k: v for k, v in b.items() if not (k in ("visual", "collision") and v == [])} for b in m["bodies"]
        ]
        m["joints"] = [{k: v for k, v in j.items() if not (k == "passive" and v is False)} for j in m.get("joints", [])]
        modules.append(m)
    return modules


class SetJson(dict):
    """The CoBRA JSON of a module set (a plain dict to every reader) that remembers the folder its mesh files are
    relative to, so that ``ModulesDB.from_json_data(db.to_json_data())`` of a set made from a URDF finds its meshes
    and saves with them, as the reference's round trip does. JSON text does not carry the folder: give ``base_dir``."""

    base_dir: Path | None = None


class ModulesDB(ModuleLookups):
    """An immutable collection of modules with unique IDs, plus its collision-ignore mode.

    Made with ``ModulesDB.from_json_file("lab/modules.json")`` (a CoBRA module set; its meshes resolve beside it),
    ``ModulesDB.from_name("robco_like")`` (an embedded set: ``embedded_db_names()``), ``ModulesDB.load(text)`` (either,
    as ``--db`` takes it) or ``ModulesDB([*db, other["gripper"]])`` (modules of other sets). ``db["J"]`` is a module,
    ``len(db)`` and ``for m in db`` go over them; ``db.by_id(id)`` or ``db.by_id[id]``, ``by_name`` (:mod:`.db_lookup`);
    ``to_json_file`` saves the set with its meshes. ``timor db validate``
    (``timor_core.model.validation.check_db_file``) lists every error and warning of a file.
    """

    def __init__(
        self,
        modules: Iterable[Module] = (),
        *,
        name: str = "",
        ignore_collisions: str = "rigid_via_joint",
        base_dir: Path | None = None,
        source: Path | None = None,
        extra: dict | None = None,
    ) -> None:
        self._modules: dict[str, Module] = {}
        for m in modules:
            if m.id in self._modules:
                raise ValidationError("duplicate module ID", value=m.id, file=source)
            self._modules[m.id] = m
        if ignore_collisions not in IGNORE_COLLISION_MODES:
            raise ValidationError(
                f"ignore_collisions must be one of {', '.join(IGNORE_COLLISION_MODES)}",
                path="$.ignore_collisions",
                value=ignore_collisions,
                file=source,
            )
        self.name = name
        self.ignore_collisions = ignore_collisions
        self.base_dir = base_dir
        self.source = source
        self.extra = dict(extra or {})
        self._pair_cache: dict[tuple[str, str], tuple[tuple[str, str], ...]] = {}
        self._cache: dict[Any, Any] = {}  # derived data of higher layers (the compiled serial URDF writer)

    # -- loading and saving ------------------------------------------------------------------------
    @classmethod
    def from_json_file(cls, path: str | Path, name: str | None = None) -> ModulesDB:
        """Load a CoBRA ``modules.json``; meshes are resolved relative to the file's folder."""
        path = Path(path).resolve() if Path(path).exists() else Path(path)
        data = jf.load_json_file(path, infinity_keys=LIMIT_KEYS)
        return cls.from_json_data(data, base_dir=path.parent, source=path, name=name or path.parent.name)

    @classmethod
    def from_json_data(
        cls, data: Any, *, base_dir: Path | None = None, source: Path | None = None, name: str = ""
    ) -> ModulesDB:
        """Build a DB from parsed JSON (a ``{"modules": [...]}`` object or a bare list of modules); meshes resolve
        below ``base_dir``, else below the folder a :class:`SetJson` (``to_json_data()``) remembers."""
        if base_dir is None and isinstance(data, SetJson):
            base_dir = data.base_dir
        try:
            if isinstance(data, list):
                data = {"modules": data}
            d = jf.obj(data, "$")
            modules_json = jf.array(jf.req(d, "modules", "$"), "$.modules")
            mode = jf.string(d.get("ignore_collisions", "rigid_via_joint"), "$.ignore_collisions")
        except InputError as exc:
            raise exc.located(file=source) from None
        with resolving_paths():  # each folder of the meshes resolved once
            modules = [
                Module.from_json(m, f"$.modules[{i}]", base_dir=base_dir, json_file=source)
                for i, m in enumerate(modules_json)
            ]
        seen: dict[str, int] = {}
        for i, m in enumerate(modules):
            if m.id in seen:
                raise ValidationError(
                    f"duplicate module ID (also at $.modules[{seen[m.id]}])",
                    path=f"$.modules[{i}].header.ID",
                    value=m.id,
                    file=source,
                )
            seen[m.id] = i
        extra = {k: v for k, v in d.items() if k not in ("modules", "ignore_collisions")}
        if "ignore_collisions" not in d:
            extra["_no_mode"] = True
        return cls(modules, name=name, ignore_collisions=mode, base_dir=base_dir, source=source, extra=extra)

    @classmethod
    def from_name(cls, name: str) -> ModulesDB:
        """Load a module set shipped with timor_core (see ``embedded_db_names()``)."""
        key = _ALIASES.get(name, name)
        if not isinstance(key, str) or key not in embedded_db_names():  # a name, never a path
            names = embedded_db_names()
            hint = _did_you_mean(name, names) if isinstance(name, str) else ""
            raise UnknownModuleError(
                f"no embedded module set named {short_repr(name)}; available: {', '.join(names)}"
                + (hint or "; timor never downloads a set (timor-python's from_name did): load its file with "
                   "ModulesDB.from_json_file('<set folder>/modules.json')")
            )  # fmt: skip
        from importlib import resources

        folder = resources.files("timor_core") / "data" / key
        if not (folder / "modules.json").is_file():
            raise UnknownModuleError(
                f"no embedded module set named {name!r}; available: {', '.join(embedded_db_names())}"
            )
        with resources.as_file(folder / "modules.json") as file:
            return cls.from_json_file(file, name=key)

    @classmethod
    def load(cls, name_or_file: str | Path) -> ModulesDB:
        """An embedded set by name, or a ``modules.json`` (or its folder) by path: which one, :func:`db_source`."""
        source = db_source(name_or_file)
        return cls.from_name(str(name_or_file)) if source is None else cls.from_json_file(source)

    def to_json_data(self, lazy: bool = False) -> dict:
        """The CoBRA JSON of the whole set (a :class:`SetJson`: a dict that remembers the set's mesh folder);
        ``lazy``: each module's bodies and joints as their records' texts, made as they are written (see
        :meth:`Module.to_json`)."""
        out = SetJson()
        out.base_dir = self.base_dir
        if not self.extra.get("_no_mode"):
            out["ignore_collisions"] = self.ignore_collisions
        out["modules"] = [m.to_json(lazy) for m in self]
        out.update({k: v for k, v in self.extra.items() if k != "_no_mode"})
        return out

    def to_json_string(self) -> str:
        """The CoBRA JSON as text (two-space indentation down to each body and joint, which are one line each)."""
        with paused_gc():
            return json_text(self.to_json_data())

    @classmethod
    def from_json_string(cls, text: str, *, name: str = "", base_dir: Path | None = None) -> ModulesDB:
        """A set from its JSON text (meshes resolve below ``base_dir``); the inverse of :meth:`to_json_string`."""
        data = jf.parse_json_text(text, what="module set JSON", infinity_keys=LIMIT_KEYS)
        return cls.from_json_data(data, base_dir=base_dir, name=name)

    def to_json_file(self, path: str | Path, copy_meshes: bool = True) -> Path:
        """Write ``modules.json`` atomically (temp file, then rename); copy meshes next to it if needed.

        Mesh files keep their path relative to the file, so the saved set loads to an equal DB. A path the folder
        already holds with another file (another set's ``meshes/link.stl``) is neither overwritten nor taken: the
        mesh goes to a name with its content's hash (``meshes/link.<hash>.stl``), which the JSON then names.
        """
        path = Path(path)
        folder = path.parent
        folder.mkdir(parents=True, exist_ok=True)
        renamed: dict[str, str] = {}
        if copy_meshes and (self.base_dir is None or folder.resolve() != Path(self.base_dir).resolve()):
            # a set made of other sets' modules (``ModulesDB([*db, gripper])``) has no folder of its own: its meshes
            # are copied all the same, each from the file it was read from
            renamed = self._copy_meshes(folder, path)
        with paused_gc():  # a big set's JSON is millions of objects without cycles
            data = self.to_json_data(lazy=not renamed)  # written record by record (renamed meshes: all at once)
            if renamed:
                _rename_meshes(data, renamed)
            atomic_write_chunks(path, itertools.chain(json_chunks(data), "\n"))
        return path

    def _copy_meshes(self, folder: Path, path: Path) -> dict[str, str]:
        """Copy the meshes into ``folder`` (see :meth:`to_json_file`); the names changed to keep another file."""
        renamed: dict[str, str] = {}
        for mesh in self.meshes():
            target = (folder / mesh.file).resolve()
            if not target.is_relative_to(folder.resolve()):
                raise ValidationError("mesh path escapes the target folder", value=mesh.file, file=path)
            if target.exists() and not mesh.missing and not filecmp.cmp(target, mesh.path, shallow=False):
                renamed[mesh.file] = _hashed_name(mesh.file, mesh.path)
                target = (folder / renamed[mesh.file]).resolve()
            if not target.exists() and not mesh.missing:
                target.parent.mkdir(parents=True, exist_ok=True)
                atomic_copy(mesh.path, target)
        return renamed

    def meshes(self) -> list[Mesh]:
        """Every mesh geometry referenced by the set's bodies."""
        return [g for m in self for b in m.bodies for g in (*b.visual, *b.collision) if isinstance(g, Mesh)]

    # -- container protocol ------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def __len__(self) -> int:
        return len(self._modules)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Module):
            return item.id in self._modules
        return item in self._modules

    def __eq__(self, other: object) -> bool:
        """Same name, same collision rule and the same modules; defaults spelled out or left out are equal."""
        return (
            isinstance(other, ModulesDB)
            and self.name == other.name
            and self.ignore_collisions == other.ignore_collisions
            and _canonical(self.to_json_data()) == _canonical(other.to_json_data())
        )

    def __hash__(self) -> int:
        return id(self)

    def __getstate__(self) -> dict:
        """Pickled without the derived-data cache (rebuilt on demand where the set is unpickled)."""
        state = dict(self.__dict__)
        state["_cache"] = {}
        return state

    def __repr__(self) -> str:
        return f"ModulesDB(name={self.name!r}, modules={len(self)})"

    def __getitem__(self, module_id: str) -> Module:
        return self._module_by_id(module_id)

    def _module_by_id(self, module_id: str) -> Module:
        try:
            return self._modules[module_id]
        except KeyError:
            raise UnknownModuleError(
                f"module set {self.name!r} has no module with ID {short_repr(module_id)}"
                f" (IDs: {short_repr(', '.join(sorted(self._modules)), 400)[1:-1]})"
            ) from None

    @property
    def ids(self) -> tuple[str, ...]:
        """All module IDs, in file order."""
        return tuple(self._modules)

    @property
    def all_module_ids(self) -> tuple[str, ...]:
        """All module IDs, in file order (the reference's name for :attr:`ids`)."""
        return self.ids

    @cached_property
    def bases(self) -> tuple[Module, ...]:
        """Modules with a ``base`` connector."""
        return tuple(m for m in self if m.is_base)

    @cached_property
    def end_effectors(self) -> tuple[Module, ...]:
        """Modules with an ``eef`` connector."""
        return tuple(m for m in self if m.is_end_effector)

    @cached_property
    def joints(self) -> tuple[Module, ...]:
        """Modules with at least one actuated joint."""
        return tuple(m for m in self if m.dof > 0)

    @cached_property
    def links(self) -> tuple[Module, ...]:
        """Modules that are neither bases, end effectors nor joints."""
        return tuple(m for m in self if not (m.is_base or m.is_end_effector or m.dof > 0))

    # -- connectivity ------------------------------------------------------------------------------
    def connections_between(self, a: str, b: str) -> tuple[tuple[str, str], ...]:
        """All (connector of a, connector of b) pairs that fit (σ_c), cached per module pair."""
        key = (a, b)
        found = self._pair_cache.get(key)
        if found is None:
            ma, mb = self.by_id(a), self.by_id(b)
            found = tuple(
                (ca.id, cb.id)
                for ca in ma.connectors.values()
                for cb in mb.connectors.values()
                if connectors_compatible(ca, cb)
            )
            self._pair_cache[key] = found
        return found

    @cached_property
    def possible_connections(self) -> frozenset[tuple[str, str, str, str]]:
        """Every fitting pair as (module, connector, module, connector), each pair listed both ways."""
        ids = self.ids
        return frozenset((a, ca, b, cb) for a in ids for b in ids for ca, cb in self.connections_between(a, b))

    @cached_property
    def possible_connection_count(self) -> int:
        """``len(possible_connections)`` without listing them: linear in the connectors, where the list is quadratic
        in the modules (`timor db info` of a set of 20,000 links, each fitting every other, grew past 17 GB)."""
        groups: dict[tuple, dict[str, tuple[int, Connector]]] = {}  # (type, size) -> gender -> (count, one of them)
        for m in self:
            for c in m.connectors.values():
                by_gender = groups.setdefault((c.type, c.size), {})
                n, first = by_gender.get(c.gender, (0, c))
                by_gender[c.gender] = (n + 1, first)
        return sum(na * nb for by_gender in groups.values() for na, ca in by_gender.values()
                   for nb, cb in by_gender.values() if connectors_compatible(ca, cb))  # fmt: skip

    @cached_property
    def connectivity_graph(self) -> nx.MultiGraph:
        """G_c: modules as nodes, one edge per possible connection (keys are the connector pairs)."""
        import networkx as nx  # imported on first use (slow to import)

        G = nx.MultiGraph()
        G.add_nodes_from((m.id, {"module": m}) for m in self)
        done = set()
        for a, ca, b, cb in sorted(self.possible_connections):
            key = frozenset(((a, ca), (b, cb)))
            if key in done:
                continue
            done.add(key)
            G.add_edge(a, b, key=(ca, cb) if (a, ca) <= (b, cb) else (cb, ca), connectors=((a, ca), (b, cb)))
        return G

    def connector(self, module_id: str, connector_id: str) -> Connector:
        """A connector by module and connector ID."""
        m = self.by_id(module_id)
        try:
            return m.connectors[connector_id]
        except KeyError:
            raise UnknownModuleError(
                f"module {module_id!r} has no connector {connector_id!r} (has: {', '.join(m.connectors)})"
            ) from None


def _hashed_name(file: str, source: Path) -> str:
    """``meshes/link.stl`` -> ``meshes/link.<first 16 hex digits of the SHA-256 of its content>.stl``."""
    digest = hashlib.sha256()
    with open(source, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    name = Path(file)
    return name.with_name(f"{name.stem}.{digest.hexdigest()[:16]}{name.suffix}").as_posix()


def _rename_meshes(data: Any, renamed: dict[str, str]) -> None:
    """Rename the mesh files of a set's JSON (every ``parameters.file`` in ``renamed``), in place."""
    if isinstance(data, list):
        for item in data:
            _rename_meshes(item, renamed)
    elif isinstance(data, dict):
        params = data.get("parameters")
        if isinstance(params, dict) and params.get("file") in renamed:
            params["file"] = renamed[params["file"]]
        for key, value in data.items():
            if key != "parameters":
                _rename_meshes(value, renamed)
