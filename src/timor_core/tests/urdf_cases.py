"""The URDF (and xacro) export cases whose text is pinned by goldens (tests/data/urdf_goldens.json).

The goldens were written by the two writers timor had before issue 27 (the compiled serial one and the tree
walk), which the tests kept byte-equal; the one writer must give the same bytes. Absolute mesh paths are
replaced by ``@SET@`` (the module set's folder) so the goldens do not depend on where the data lie.

    python src/timor_core/tests/urdf_cases.py --write   # rewrite the goldens (only for an intended change)
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from branched_set import branched_json  # noqa: E402
from conftest import IMPROV_FILE, primitives_json  # noqa: E402

from timor_core.errors import TimorError  # noqa: E402
from timor_core.export.formats.ros2_control import Ros2ControlConfig  # noqa: E402
from timor_core.model.assembly import ModuleAssembly  # noqa: E402
from timor_core.model.db import ModulesDB  # noqa: E402

GOLDENS = HERE / "data" / "urdf_goldens.json"
OPTIONS = (
    {},
    {"prefix": "left_", "mesh_uri": "package"},
    {"mesh_uri": "relative", "wrl": "keep"},
    {"name": "my.robot", "mesh_uri": "path"},
    {"package": "pkg", "mesh_uri": "package", "prefix": "r2_"},
)
PLACED = np.array([[0.0, -1.0, 0.0, 0.1], [1.0, 0.0, 0.0, -0.2], [0.0, 0.0, 1.0, 0.3], [0.0, 0.0, 0.0, 1.0]])
Case = tuple[str, Callable[[], str], ModulesDB]


def normalized(text: str, db: ModulesDB) -> str:
    """``text`` with the module set's folder (as written in mesh URIs) replaced by ``@SET@``."""
    base = Path(db.base_dir)
    for folder in sorted({str(base.resolve()), str(base)}, key=len, reverse=True):
        text = text.replace(folder, "@SET@")
    return text


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def outcome(fn: Callable[[], str], db: ModulesDB) -> str:
    """The normalized text, or ``error: <type>: <message>`` for a TimorError."""
    try:
        return normalized(fn(), db)
    except TimorError as exc:
        return f"error: {type(exc).__name__}: {normalized(str(exc), db)}"


def serial_chains(db: ModulesDB, count: int, seed: int) -> list[list[str]]:
    """``count`` random module-ID lists that make a valid serial assembly."""
    rng, found = random.Random(seed), []
    while len(found) < count:
        ids = [rng.choice(db.ids) for _ in range(rng.randint(1, 9))]
        try:
            ModuleAssembly.from_serial_modules(db, ids).tree()
        except TimorError:
            continue
        found.append(ids)
    return found


def _urdf(db: ModulesDB, ids, placement=None, name=None, **options) -> Callable[[], str]:
    return lambda: ModuleAssembly.from_serial_modules(db, ids, placement).to_urdf(name, **options)


def _module(data: dict, module_id: str) -> dict:
    return next(m for m in data["modules"] if m["header"]["ID"] == module_id)


def _db(folder: Path, data: dict, name: str) -> ModulesDB:
    path = folder / name / "modules.json"  # the set is named after its folder
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(data, indent=1))
    return ModulesDB.from_json_file(path)


def _odd_set(folder: Path) -> ModulesDB:
    """Primitives with a side output on J1's proximal body, a branching J2 and a joint of P1 named ``to_m2``."""
    data = primitives_json()
    j1 = _module(data, "J1")
    j1["bodies"][0]["connectors"].append(dict(j1["bodies"][1]["connectors"][0], ID="J1_side"))
    j2 = _module(data, "J2")
    j2["bodies"].append(dict(j2["bodies"][1], ID="J2_extra", connectors=[]))
    j2["joints"].append(dict(j2["joints"][0], ID="J2_joint_b", child="J2_extra"))
    _module(data, "P1")["joints"][0]["ID"] = "to_m2"
    return _db(folder, data, "odd")


def _odd_cases(db: ModulesDB) -> Iterator[Case]:
    def chain(*connectors: str) -> list[tuple[int, str, int, str]]:
        pairs = list(zip(connectors[::2], connectors[1::2]))
        return [(k, a, k + 1, b) for k, (a, b) in enumerate(pairs)]

    start, j1_in, j1_out, eef_in = "base_out", "J1_proximal_connector", "J1_distal_connector", "eef_proximal_connector"
    cases = {
        ("base", "J1", "i_15", "eef"): chain(
            start, j1_in, "J1_side", "i_15_proximal_connector", "i_15_distal_connector", eef_in
        ),
        ("base", "J1", "J1", "eef"): chain(start, j1_in, j1_out, j1_in, "J1_side", eef_in),
        ("base", "J2", "J1", "eef"): chain(
            start, "J2_proximal_connector", "J2_distal_connector", j1_in, j1_out, eef_in
        ),
        ("base", "P1", "J1", "eef"): chain(
            start, "P1_proximal_connector", "P1_distal_connector", j1_in, j1_out, eef_in
        ),
        ("base", "J1", "P1", "eef"): chain(
            start, j1_in, j1_out, "P1_proximal_connector", "P1_distal_connector", eef_in
        ),
    }
    for ids, connections in cases.items():
        yield (
            f"odd/{'-'.join(ids)}",
            lambda ids=ids, c=connections: ModuleAssembly(db, ids, c, (0, "base")).to_urdf(),
            db,
        )
    for ids in (["base", "J2", "J1", "eef"], ["base", "J1", "P1", "eef"], ["base", "P1", "J1"], ["base", "J1", "eef"]):
        yield f"odd-ids/{'-'.join(ids)}", _urdf(db, ids), db


def _tools_set(folder: Path) -> ModulesDB:
    """Primitives with a second flange on the end effector and a spare connector on l_15."""
    data = primitives_json()
    eef = _module(data, "eef")
    flange = next(c for b in eef["bodies"] for c in b["connectors"] if c["type"] == "eef")
    eef["bodies"][0]["connectors"].append(dict(flange, ID="second_flange"))
    link = _module(data, "l_15")
    link["bodies"][0]["connectors"].append(dict(link["bodies"][0]["connectors"][0], ID="spare", gender="h"))
    return _db(folder, data, "tools")


def _tree_cases(folder: Path) -> Iterator[Case]:
    db = _db(folder, branched_json(), "branched")
    arms = [("J1", "J1_proximal_connector", "J1_distal_connector"), ("J2", "J2_proximal_connector", None),
            ("tee", "tee_proximal_connector", "tee_side_connector")]  # fmt: skip
    ids, conns = ["base3"], []
    for k, (module, entry, out) in enumerate(arms):
        ids.append(module)
        conns.append((0, f"out_{k}", len(ids) - 1, entry))
        if out is not None:
            ids.append("eef")
            conns.append((len(ids) - 2, out, len(ids) - 1, "eef_proximal_connector"))
    for k, options in enumerate(OPTIONS):
        placement = PLACED if k % 2 else None
        yield (
            f"tree/{k}",
            lambda o=options, p=placement: ModuleAssembly(db, ids, conns, (0, "base"), p).to_urdf(
                o.get("name"), **{key: v for key, v in o.items() if key != "name"}
            ),
            db,
        )
    tee = ["base", "tee", "J1", "eef", "J2"]
    tee_conns = [(0, "base_out", 1, "tee_proximal_connector"), (1, "tee_distal_connector", 2, "J1_proximal_connector"),
                 (2, "J1_distal_connector", 3, "eef_proximal_connector"), (1, "tee_side_connector", 4,
                 "J2_proximal_connector")]  # fmt: skip
    yield "tree/tee", lambda: ModuleAssembly(db, tee, tee_conns, (0, "base")).to_urdf(), db
    config = Ros2ControlConfig()
    yield "tree/ros2_control", lambda: ModuleAssembly(db, tee, tee_conns, (0, "base")).to_urdf(ros2_control=config), db
    flipped = [(b, cb, a, ca) for a, ca, b, cb in tee_conns]
    yield "tree/flipped", lambda: ModuleAssembly(db, tee, flipped, (0, "base")).to_urdf("r"), db
    yield "xacro/tee", lambda: ModuleAssembly(db, tee, tee_conns, (0, "base")).to_xacro("m", prefix="p_"), db


def cases(folder: Path, improv: bool = True, imported: bool = True) -> Iterator[Case]:
    """Every golden case: (id, the call that writes the text, its module set). ``folder``: for module set files."""
    if improv and IMPROV_FILE.is_file():
        from timor_core.paper.experiments import exp1_space

        db = ModulesDB.from_json_file(IMPROV_FILE)
        space = exp1_space(db)
        for k in range(0, len(space), 97):
            options = dict(OPTIONS[(k // 97) % len(OPTIONS)])
            yield f"exp1/{k}", _urdf(db, space[k], None, options.pop("name", None), **options), db
        for k in range(0, len(space), 997):
            yield f"exp1-placed/{k}", _urdf(db, space[k], PLACED), db
    for set_name in ("geometric_primitive_modules", "robco_like"):
        db = ModulesDB.from_name(set_name)
        for k, ids in enumerate(serial_chains(db, 150, seed=3)):
            options = dict(OPTIONS[k % len(OPTIONS)])
            placement = PLACED if k % 10 == 0 else None
            yield f"{set_name}/{k}", _urdf(db, ids, placement, options.pop("name", None), **options), db
    primitives = ModulesDB.from_name("geometric_primitive_modules")
    errors = [(["base", "J1", "nope"], {}), ([], {}), (["base", "eef", "J1"], {}), (["J1", "J2"], {}),
              (["base", "J1", "eef"], {"mesh_uri": "ftp"}), (["base", "J1", "eef"], {"prefix": "bad prefix"}),
              (["base", "J1", "eef"], {"name": "../x"}), (["base", "J1", "eef"], {"wrl": "drop"}),
              (["base", "nope"], {"mesh_uri": "ftp"})]  # fmt: skip
    for k, (ids, options) in enumerate(errors):
        options = dict(options)
        yield f"error/{k}", _urdf(primitives, ids, None, options.pop("name", None), **options), primitives
    yield "error/placement", _urdf(primitives, ["base", "J1"], np.eye(4) * 2), primitives
    yield from _odd_cases(_odd_set(folder))
    tools = _tools_set(folder)
    for ids in (["base", "J1", "eef"], ["base", "J1", "l_15"], ["base", "l_15", "J1"], ["base", "J1", "l_15", "eef"]):
        yield f"tools/{'-'.join(ids)}", _urdf(tools, ids), tools
    yield from _tree_cases(folder)
    ros = Ros2ControlConfig(command_interfaces=("position",), state_interfaces=("position", "velocity"))
    yield "ros2_control/chain", _urdf(primitives, ["base", "J1", "l_15", "J2", "eef"], None, "bot", prefix="p_",
                                      ros2_control=ros), primitives  # fmt: skip
    yield (
        "xacro/chain",
        lambda: ModuleAssembly.from_serial_modules(primitives, ["base", "J1", "eef"]).to_xacro(
            ros2_control=ros, mesh_uri="package"
        ),
        primitives,
    )
    if imported:
        yield from _imported_cases()


def _imported_cases() -> Iterator[Case]:
    """Robots imported from example-robot-data's URDFs (when installed), with and without their own names."""
    from urdf_agreement import example_urdfs, robots_share

    from timor_core.export.urdf_import.importer import assembly_from_urdf

    share = robots_share()
    if share is None:
        return
    for file_name in ("panda.urdf", "ur5_robot.urdf"):
        path = next(p for p in example_urdfs(share) if p.name == file_name)
        for keep in (False, True):
            assembly = assembly_from_urdf(path, [share.parent], keep_names=keep)
            yield f"imported/{file_name}/{keep}", lambda a=assembly: a.to_urdf("r", mesh_uri="relative"), assembly.db


def texts(folder: Path, improv: bool = True) -> dict[str, str]:
    """Every case's normalized outcome, by case id."""
    return {case_id: outcome(fn, db) for case_id, fn, db in cases(folder, improv)}


if __name__ == "__main__":
    import tempfile

    if sys.argv[1:] != ["--write"]:
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        found = texts(Path(tmp))
    GOLDENS.write_text(json.dumps({k: digest(v) for k, v in found.items()}, indent=0, sort_keys=True) + "\n")
    print(f"{len(found)} goldens written to {GOLDENS}")
