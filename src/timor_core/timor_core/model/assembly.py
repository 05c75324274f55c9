"""ModuleAssembly: which modules, connected how, mounted where — and the models generated from it.

Module instances are addressed by their index in ``assembly_modules`` (one module ID may appear many
times); connections are ``(i, connector_of_i, j, connector_of_j)``; ``base_connector`` is
``(i, connector)``, the connector that mounts the assembly to the world.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.fileio import write_json
from timor_core.common.transforms import ROT_X_PI, readonly
from timor_core.errors import AssemblyError, ConnectorError, InputError, UnknownModuleError, ValidationError
from timor_core.limits import check_count
from timor_core.model.assembly_models import AssemblyModels, placement_matrix
from timor_core.model.db import ModulesDB
from timor_core.model.module import Module, connectors_compatible

if TYPE_CHECKING:
    import networkx as nx

PinRobot = Any  # timor_core.kinematics.robot.PinRobot (a higher layer: not imported here)
Ros2ControlConfig = Any  # timor_core.export.formats.ros2_control.Ros2ControlConfig (a higher layer: not imported here)
__all__ = ["ModuleAssembly", "Connection"]

Connection = tuple[int, str, int, str]


def _module_ids(given: Sequence[str], argument: str) -> list[str]:
    """The module IDs as strings; one string is refused (it would be read one character per module: ``'b'``)."""
    if isinstance(given, (str, bytes)):
        raise InputError(f"{argument} must be a sequence of module IDs, not one string (split it: text.split())",
                         path=argument, value=given)  # fmt: skip
    return [str(m) for m in given]


class ModuleAssembly(AssemblyModels):
    """A tree of module instances from one ModulesDB, mounted to the world by a base connector.

    A chain: ``ModuleAssembly.from_serial_modules(db, ["base", "J", "L_250", "J", "gripper"])``; a tree: start with
    ``ModuleAssembly(db, ["base"])`` and ``add(module_id, (index, connector))``. ``assembly.robot`` is its Pinocchio
    model (``PinRobot``: fk, ik, dynamics, collisions); ``to_urdf``, ``to_xacro``, ``to_srdf``, ``to_mjcf`` export it;
    ``to_json_file`` / ``from_json_file`` save and load it in the CoBRA solution layout.
    """

    def __init__(
        self,
        db: ModulesDB | None = None,
        assembly_modules: Sequence[str] = (),
        connections: Sequence[Sequence[Any]] = (),
        base_connector: Sequence[Any] | None = None,
        base_placement: np.ndarray | None = None,
        *,
        database: ModulesDB | None = None,
    ) -> None:
        the_db = db if database is None else database  # database=: timor-python's name
        if the_db is None or (db is not None and database is not None):
            raise InputError("an assembly needs one module set: ModuleAssembly(db, ...) or database=db", value=db)
        self.db: ModulesDB = the_db
        self.module_ids: list[str] = _module_ids(assembly_modules, "assembly_modules")
        check_count(len(self.module_ids), "max_modules", "the number of modules in an assembly")
        self.modules: list[Module] = [the_db.by_id[m] for m in self.module_ids]
        check_count(sum(m.dof for m in self.modules), "max_dof", "the degrees of freedom of an assembly")
        self.connections: list[Connection] = []
        self._used: dict[tuple[int, str], int] = {}
        self.base_placement = placement_matrix(base_placement)
        self._cache: dict[Any, Any] = {}
        for k, c in enumerate(connections):
            self._add_connection(c, k)
        if base_connector is None:
            self.base_connector = self._find_base_connector()
        else:
            self.base_connector = self._check_base_connector(base_connector)

    # -- construction ------------------------------------------------------------------------------
    @classmethod
    def from_serial_modules(
        cls, db: ModulesDB, module_ids: Sequence[str], base_placement: np.ndarray | None = None
    ) -> ModuleAssembly:
        """A chain: each module joined to the next by the only connection that fits, base first
        (``["base", "J", "L_250", "J", "gripper"]``).

        Raises UnknownModuleError for an ID the set does not have, ConnectorError if a neighbouring pair has no free
        fitting connection, or more than one, and InputError for one string instead of a sequence of IDs.
        """
        ids = _module_ids(module_ids, "module_ids")
        if not ids:
            raise AssemblyError("a serial assembly needs at least one module")
        check_count(len(ids), "max_modules", "the number of modules in an assembly")
        modules = [db.by_id[m] for m in ids]
        base = modules[0].base_connectors
        if len(base) != 1:
            raise AssemblyError(f"the first module {ids[0]!r} must have exactly one base connector, it has {len(base)}")
        used_in = base[0].id
        connections: list[Connection] = []
        for i in range(len(ids) - 1):
            options = [(ca, cb) for ca, cb in db.connections_between(ids[i], ids[i + 1]) if ca != used_in]
            if not options:
                raise ConnectorError(
                    f"module {ids[i]!r} (position {i}) has no free connector that fits module {ids[i + 1]!r}"
                    f" (position {i + 1})"
                )
            if len(options) > 1:
                raise ConnectorError(
                    f"modules {ids[i]!r} (position {i}) and {ids[i + 1]!r} (position {i + 1}) can be joined in"
                    f" {len(options)} ways {options}: give the connections explicitly"
                )
            ca, cb = options[0]
            connections.append((i, ca, i + 1, cb))
            used_in = cb
        if cls is not ModuleAssembly:  # a subclass may check more in __init__
            return cls(db, ids, connections, (0, base[0].id), base_placement)
        # what __init__ would build; the connections fit and use distinct connectors by construction
        check_count(sum([m.dof for m in modules]), "max_dof", "the degrees of freedom of an assembly")
        assembly = cls.__new__(cls)
        assembly.db, assembly.module_ids, assembly.modules = db, ids, modules
        assembly.base_placement = placement_matrix(base_placement)
        assembly._cache = {}
        assembly.connections = connections
        assembly._used = {}
        for k, (i, ca, j, cb) in enumerate(connections):
            assembly._used[(i, ca)] = assembly._used[(j, cb)] = k
        assembly.base_connector = (0, base[0].id)
        return assembly

    def _add_connection(self, c: Sequence[Any], k: int | None = None) -> None:
        where = f"connection {k} " if k is not None else "connection "
        if len(c) != 4:
            raise AssemblyError(f"{where}must be (module index, connector, module index, connector), got {c!r}")
        i, ci, j, cj = int(c[0]), str(c[1]), int(c[2]), str(c[3])
        n = len(self.modules)
        for idx in (i, j):
            if not 0 <= idx < n:
                raise AssemblyError(f"{where}{tuple(c)!r}: module index {idx} out of range (0..{n - 1})")
        if i == j:
            raise AssemblyError(f"{where}{tuple(c)!r} joins a module to itself")
        a = self._connector(i, ci)
        b = self._connector(j, cj)
        if not connectors_compatible(a, b):
            raise ConnectorError(
                f"{where}{tuple(c)!r}: connector {ci!r} of {self.module_ids[i]!r} ({a.gender}, type {a.type!r},"
                f" size {list(a.size)}) does not fit connector {cj!r} of {self.module_ids[j]!r} ({b.gender},"
                f" type {b.type!r}, size {list(b.size)})"
            )
        for key in ((i, ci), (j, cj)):
            if key in self._used:
                raise AssemblyError(
                    f"{where}{tuple(c)!r}: connector {key[1]!r} of module {key[0]} is already used by"
                    f" connection {self._used[key]}"
                )
        self._used[(i, ci)] = self._used[(j, cj)] = len(self.connections)
        self.connections.append((i, ci, j, cj))

    def _connector(self, i: int, cid: str):
        try:
            return self.modules[i].connectors[cid]
        except KeyError:
            raise UnknownModuleError(
                f"module {self.module_ids[i]!r} (index {i}) has no connector {cid!r}"
                f" (has: {', '.join(self.modules[i].connectors)})"
            ) from None

    def _check_base_connector(self, bc: Sequence[Any]) -> tuple[int, str]:
        if len(bc) < 2:
            raise AssemblyError(f"base_connector must be (module index, connector), got {bc!r}")
        i, cid = int(bc[0]), str(bc[1])
        if not 0 <= i < len(self.modules):
            raise AssemblyError(f"base connector module index {i} out of range")
        c = self._connector(i, cid)
        if not c.is_base:
            raise ConnectorError(
                f"base connector {cid!r} of module {self.module_ids[i]!r} is of type {c.type!r}, not 'base'"
            )
        if (i, cid) in self._used:
            raise AssemblyError(f"base connector {cid!r} of module {i} is also used by a connection")
        return i, cid

    def _find_base_connector(self) -> tuple[int, str]:
        free = [(i, c.id) for i, m in enumerate(self.modules) for c in m.base_connectors if (i, c.id) not in self._used]
        if not self.modules:
            return (0, "")
        if len(free) != 1:
            raise AssemblyError(f"cannot tell the base connector: {len(free)} free base connectors {free}; give it")
        return free[0]

    def add(self, module_id: str, to: tuple[int, str], connector: str | None = None) -> int:
        """Attach a new instance of ``module_id`` to connector ``to = (index, connector)``; return its index.

        ``connector`` picks the new module's connector; if omitted, the single one that fits is used.
        """
        new = self.db.by_id(module_id)
        check_count(len(self.modules) + 1, "max_modules", "the number of modules in an assembly")
        check_count(self.dof + new.dof, "max_dof", "the degrees of freedom of an assembly")
        i, ci = int(to[0]), str(to[1])
        if connector is None:
            options = [cb for ca, cb in self.db.connections_between(self.module_ids[i], module_id) if ca == ci]
            if len(options) != 1:
                raise ConnectorError(
                    f"{len(options)} connectors of {module_id!r} fit connector {ci!r} of module {i}"
                    + (f" ({options}): choose one" if options else "")
                )
            connector = options[0]
        self.module_ids.append(new.id)
        self.modules.append(new)
        try:
            self._add_connection((i, ci, len(self.modules) - 1, connector))
        except Exception:
            self.module_ids.pop()
            self.modules.pop()
            raise
        self._cache.clear()
        return len(self.modules) - 1

    def start_with(self, module_id: str) -> int:
        """Put the first module (a base) into an empty assembly; return its index (0)."""
        if self.modules:
            raise AssemblyError("start_with needs an empty assembly")
        module = self.db.by_id(module_id)
        self.module_ids.append(module.id)
        self.modules.append(module)
        self.base_connector = self._find_base_connector()
        self._cache.clear()
        return 0

    def add_random_from_db(self, db_filter=None, rng=None) -> int:
        """Attach a random fitting module of the set (see ``timor_core.model.growth.add_random_module``)."""
        from timor_core.model.growth import add_random_module

        return add_random_module(self, db_filter, rng)

    def used_connectors(self) -> list[tuple[int, str]]:
        """(module index, connector ID) of every connector a connection uses."""
        return list(self._used)

    # -- plain properties --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.modules)

    def __repr__(self) -> str:
        return f"ModuleAssembly({self.module_ids!r}, db={self.db.name!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, ModuleAssembly)
            and self.module_ids == other.module_ids
            and sorted(self.connections) == sorted(other.connections)
            and self.base_connector == other.base_connector
            and np.allclose(self.base_placement, other.base_placement)
        )

    __hash__ = None  # type: ignore[assignment]

    @property
    def dof(self) -> int:
        """Number of actuated joints."""
        return sum(m.dof for m in self.modules)

    @property
    def nJoints(self) -> int:  # noqa: N802 (timor-python's name)
        """timor-python's name of :attr:`dof` (its modules' joints are the actuated ones)."""
        return self.dof

    @property
    def nModules(self) -> int:  # noqa: N802 (timor-python's name)
        """timor-python's name of ``len(assembly)``."""
        return len(self.modules)

    @property
    def original_module_ids(self) -> tuple[str, ...]:
        """The module set's ID of every module instance, in order (timor-python's name of :attr:`module_ids`)."""
        return tuple(self.module_ids)

    @property
    def mass(self) -> float:
        """Total mass of all modules."""
        return float(sum(m.mass for m in self.modules))

    @property
    def cost(self) -> float:
        """Sum of the modules' header costs."""
        return float(sum(m.cost for m in self.modules))

    @property
    def is_tree(self) -> bool:
        """True if the modules form a tree (no closed kinematic chain)."""
        import networkx as nx  # imported on first use (slow to import)

        return len(self.connections) == len(self.modules) - 1 and nx.is_connected(self.module_graph)

    @property
    def module_graph(self) -> nx.MultiGraph:
        """Module instances as nodes, one edge per connection."""
        import networkx as nx

        G = nx.MultiGraph()
        G.add_nodes_from(range(len(self.modules)))
        for i, ci, j, cj in self.connections:
            G.add_edge(i, j, connectors=(ci, cj))
        return G

    # -- the assembly graph G_a ---------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """G_a: every module's G_m (nodes prefixed by the instance index), connected connectors joined
        by R_x(π), and the base connector joined to ``'world'`` the same way (after the base placement).
        """
        G = self._cache.get("graph")
        if G is not None:
            return G
        import networkx as nx

        G = nx.DiGraph()
        for i, m in enumerate(self.modules):
            Gm = m.graph
            G.add_nodes_from(((i, *n), d) for n, d in Gm.nodes(data=True))
            G.add_edges_from(((i, *a), (i, *b), d) for a, b, d in Gm.edges(data=True))
        for i, ci, j, cj in self.connections:
            G.add_edge((i, "connector", ci), (j, "connector", cj), transform=ROT_X_PI)
            G.add_edge((j, "connector", cj), (i, "connector", ci), transform=ROT_X_PI)
        if self.modules:
            bi, bc = self.base_connector
            to_world = readonly(self.base_placement @ ROT_X_PI)
            G.add_node("world")
            G.add_edge("world", (bi, "connector", bc), transform=to_world)
            G.add_edge((bi, "connector", bc), "world", transform=readonly(np.linalg.inv(to_world)))
        self._cache["graph"] = G
        return G

    def transform(self, source: Any = "world", target: Any = None) -> np.ndarray:
        """Pose of frame ``target`` in frame ``source`` at q = 0, along the shortest path in G_a.

        Frames are G_a nodes: ``'world'`` or ``(index, 'body'|'connector'|'joint', id)``.
        """
        import networkx as nx

        G = self.graph
        if target is None:
            raise AssemblyError("transform needs a target frame")
        for node in (source, target):
            if node not in G:
                raise AssemblyError(f"no frame {node!r} in the assembly graph")
        try:
            path = nx.shortest_path(G, source, target)
        except nx.NetworkXNoPath:
            raise AssemblyError(f"frames {source!r} and {target!r} are not connected") from None
        T = np.eye(4)
        for a, b in zip(path, path[1:]):
            T = T @ G.edges[a, b]["transform"]
        return T

    # -- JSON --------------------------------------------------------------------------------------
    def to_json_data(self) -> dict:
        """The assembly in the CoBRA solution layout (moduleOrder, moduleConnection, baseConnection, basePose)."""
        return {
            "moduleSet": self.db.name,
            "moduleOrder": list(self.module_ids),
            "moduleConnection": [list(c) for c in self.connections],
            "baseConnection": [[self.base_connector[0], self.base_connector[1], 0]],
            "basePose": [[[float(v) for v in row] for row in self.base_placement]],
        }

    def to_json_file(self, path: str | Path) -> Path:
        """Save the assembly JSON atomically."""
        return write_json(path, self.to_json_data())

    @classmethod
    def from_json_data(cls, db: ModulesDB, data: Any, file: Path | None = None) -> ModuleAssembly:
        """Parse an assembly JSON (``moduleOrder`` required; connections default to a serial chain)."""
        try:
            d = jf.obj(data, "$")
            order_json = jf.array(jf.req(d, "moduleOrder", "$"), "$.moduleOrder")
            if not order_json:
                raise ValidationError("an assembly needs at least one module", path="$.moduleOrder", value=[])
            check_count(len(order_json), "max_modules", "the number of modules", path="$.moduleOrder")
            order = [jf.string(m, f"$.moduleOrder[{k}]") for k, m in enumerate(order_json)]
            placement = None
            if "basePose" in d:
                poses = jf.array(d["basePose"], "$.basePose")
                if len(poses) != 1:
                    raise InputError("exactly one base pose is supported", path="$.basePose", value=poses)
                placement = jf.pose(poses[0], "$.basePose[0]")
            if "moduleConnection" not in d:
                return cls.from_serial_modules(db, order, placement)
            conns = []
            for k, c in enumerate(jf.array(d["moduleConnection"], "$.moduleConnection")):
                cp = f"$.moduleConnection[{k}]"
                if not isinstance(c, list) or len(c) != 4:
                    raise InputError("expected [index, connector, index, connector]", path=cp, value=c)
                conns.append(
                    (
                        _index(c[0], f"{cp}[0]"),
                        jf.string(c[1], f"{cp}[1]"),
                        _index(c[2], f"{cp}[2]"),
                        jf.string(c[3], f"{cp}[3]"),
                    )
                )
            base = None
            if d.get("baseConnection"):
                bcs = jf.array(d["baseConnection"], "$.baseConnection")
                if len(bcs) != 1:
                    raise InputError("exactly one base connection is supported", path="$.baseConnection", value=bcs)
                bc = bcs[0]
                if not isinstance(bc, list) or len(bc) < 2:
                    raise InputError("expected [index, connector, ...]", path="$.baseConnection[0]", value=bc)
                base = (_index(bc[0], "$.baseConnection[0][0]"), jf.string(bc[1], "$.baseConnection[0][1]"))
        except InputError as exc:
            raise exc.located(file=file) from None
        try:
            return cls(db, order, conns, base, placement)
        except (AssemblyError, ConnectorError, UnknownModuleError) as exc:
            if file is None:
                raise
            raise type(exc)(f"{file}: {exc}") from None

    def to_json_string(self) -> str:
        """The assembly JSON as text (see :meth:`to_json_data`)."""
        return json.dumps(self.to_json_data(), indent=2)

    @classmethod
    def from_json_string(cls, db: ModulesDB, text: str) -> ModuleAssembly:
        """The inverse of :meth:`to_json_string`."""
        return cls.from_json_data(db, jf.parse_json_text(text, what="assembly JSON"))

    @classmethod
    def from_json_file(cls, db: ModulesDB, path: str | Path) -> ModuleAssembly:
        """Load an assembly JSON file."""
        return cls.from_json_data(db, jf.load_json_file(path), Path(path))


def _index(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError("expected a module index (an integer)", path=path, value=value)
    return value
