"""The assembly iterator's generic options (timor_core.search): the options against a brute-force reference on
short chains of the geometric primitives, one connection at a time, canonical chromosomes without duplicates, and
invalid options refused."""

from __future__ import annotations

import copy
import itertools
import json

import pytest
from conftest import primitives_json

from timor_core import InputError, ModuleAssembly, ModulesDB
from timor_core.errors import ConnectorError, FormatError
from timor_core.search import SearchSpaceError, SerialSpace, SpaceOptions, canonical, iter_chromosomes, to_chromosome

# ---------------------------------------------------------------------------------------------------
# the generic options against a brute-force reference (geometric primitives, short chains)
# ---------------------------------------------------------------------------------------------------
PRIM_MIDDLE = ("J1", "J2", "P1", "i_15", "i_30", "i_45", "l_15", "l_30", "l_45")
I_LINKS, L_LINKS = ("i_15", "i_30", "i_45"), ("l_15", "l_30", "l_45")


def _matches(seg, patterns, classes) -> bool:
    def ok(m, tok):
        return m == tok or m in classes.get(tok, ())

    return any(len(p) == len(seg) and all(ok(m, t) for m, t in zip(seg, p)) for p in patterns)


def _reference_ok(db: ModulesDB, ids: tuple[str, ...], o: dict) -> bool:
    """The rules written out plainly, with from_serial_modules as the connectivity oracle."""
    classes = o.get("classes", {})
    middle = [m for m in PRIM_MIDDLE if m not in o.get("exclude", ())]
    if ids[0] != "base" or ids[-1] != "eef" or any(m not in middle for m in ids[1:-1]):
        return False
    dof = sum(db[m].dof for m in ids)
    if dof < o.get("dof_min", 1) or ("dof_max" in o and dof > o["dof_max"]):
        return False
    if "max_modules" in o and len(ids) > o["max_modules"]:
        return False
    if "first_modules" in o and ids[1] not in o["first_modules"]:
        return False
    if o.get("first_is_joint") and db[ids[1]].dof == 0:
        return False
    if "successors" in o:
        pairs = set()
        for a, b in o["successors"]:
            expand = {"@base": ["base"], "@eef": ["eef"], "@link": I_LINKS + L_LINKS}
            pairs.update(itertools.product(expand.get(a, [a]), expand.get(b, [b])))
        if any(p not in pairs for p in zip(ids, ids[1:])):
            return False
    inner = ids[1:-1]
    joints = [k for k, m in enumerate(inner) if db[m].dof > 0]
    if "joint_sequences" in o and tuple(inner[k] for k in joints) not in o["joint_sequences"]:
        return False
    cut = [-1, *joints, len(inner)]
    segments = [inner[a + 1 : b] for a, b in zip(cut, cut[1:])]
    kinds = ["head"] + ["gap"] * (len(segments) - 2) + ["tail"] if joints else ["head+tail"]
    for seg, kind in zip(segments, kinds):
        for k in kind.split("+"):
            cap = o.get(
                {"head": "max_links_before_first_joint", "gap": "max_links_between_joints"}.get(
                    k, "max_links_after_last_joint"
                )
            )
            if cap is not None and len(seg) > cap:
                return False
            pats = o.get(f"{k}_patterns")
            if pats is not None and not _matches(seg, pats, classes):
                return False
    try:
        ModuleAssembly.from_serial_modules(db, ids)
    except ConnectorError:
        return False
    return True


OPTION_SETS = [
    dict(
        dof_max=2,
        max_links_between_joints=1,
        max_links_before_first_joint=1,
        max_links_after_last_joint=0,
        max_modules=6,
    ),
    dict(
        first_is_joint=True,
        dof_min=2,
        dof_max=3,
        classes={"i": I_LINKS, "l": L_LINKS},
        exclude=("P1",),
        gap_patterns=(("i",), ("l", "i"), ()),
        tail_patterns=((), ("l",)),
        max_modules=6,
    ),
    dict(
        successors=(("@base", "J1"), ("J1", "@link"), ("@link", "J2"), ("J2", "@eef"), ("J2", "J1"), ("@link", "@eef")),
        dof_max=3,
        max_modules=6,
    ),
    dict(
        joint_sequences=(("J1", "J2"), ("P1",)),
        first_modules=("i_15", "J1", "P1"),
        max_links_between_joints=2,
        max_links_after_last_joint=1,
        max_links_before_first_joint=1,
        max_modules=6,
    ),
    dict(dof_min=0, max_modules=4, head_patterns=((), ("i_15",)), tail_patterns=(("l_15",), ())),
    dict(dof_min=0, dof_max=1, max_modules=5),
]


def _brute(db: ModulesDB, o: dict, max_len: int = 6) -> list[tuple[str, ...]]:
    order = {m: k for k, m in enumerate(db.ids)}
    out = [
        ids
        for k in range(max_len - 1)
        for mid in itertools.product(PRIM_MIDDLE, repeat=k)
        if _reference_ok(db, ids := ("base", *mid, "eef"), o)
    ]
    return sorted(out, key=lambda t: [order[m] for m in t])


@pytest.mark.parametrize("k", range(len(OPTION_SETS)))
def test_options_match_bruteforce(primitives, k):
    o = OPTION_SETS[k]
    space = SerialSpace(primitives, SpaceOptions(**o))
    assert max(space.count_by("length")) <= 6
    expected = _brute(primitives, o)
    got = list(space)
    assert got == expected  # same assemblies, in DB-lexicographic order
    assert len(space) == len(expected) > 0
    assert sum(space.count_by("dof").values()) == len(space)


def _awkward_db() -> ModulesDB:
    """Primitives with connectivity traps: i_30 fits nothing, l_45 can be entered two ways, i_45 left two ways."""
    data = primitives_json()
    mods = {m["header"]["ID"]: m for m in data["modules"]}
    for c in mods["i_30"]["bodies"][0]["connectors"]:
        c["gender"] = "h"
    for c in mods["l_45"]["bodies"][0]["connectors"]:
        c["gender"] = "f"
    conns = mods["i_45"]["bodies"][0]["connectors"]
    extra = copy.deepcopy(next(c for c in conns if c["gender"] == "m"))
    extra["ID"] = "i_45_side_connector"
    conns.append(extra)
    return ModulesDB.from_json_data(data, name="awkward")


def test_connectivity_exactly_one_connection():
    db = _awkward_db()
    o = dict(dof_max=2, max_modules=5)
    space = SerialSpace(db, SpaceOptions(**o))
    got = set(space)
    expected = set(_brute(db, o, max_len=5))
    assert got == expected and got
    flat = {m for ids in got for m in ids}
    assert not flat & {"i_30", "i_45", "l_45"}  # fits nothing / ambiguous exit / ambiguous entry
    for ids in got:
        ModuleAssembly.from_serial_modules(db, ids)


# ---------------------------------------------------------------------------------------------------
# chromosomes and de-duplication
# ---------------------------------------------------------------------------------------------------
def test_canonical_chromosome_dedup(robco):
    a = "J L_100 0 L_100 0 0 J".split()
    b = "J L_100 0 0 0 L_100 J".split()
    assert canonical(a) == canonical(b) == ("J", "L_100", "L_100", "J")
    space = SerialSpace(robco, dof_max=3, first_is_joint=True, max_links_between_joints=2, max_links_after_last_joint=0)
    assert space.index(("base", *canonical(a), "gripper")) == space.index(("base", *canonical(b), "gripper"))
    assert to_chromosome(("J", "L_100"), 4) == ("J", "L_100", "0", "0")
    with pytest.raises(ValueError):
        to_chromosome(("J",) * 5, 4)
    chromos = list(iter_chromosomes(space, n_slots=7))
    assert len(chromos) == len(set(chromos)) == len(space)  # every robot once, whatever its empty slots
    assert all(len(c) == 7 for c in chromos)
    assert {("base", *canonical(c), "gripper") for c in chromos} == set(space)
    assert len(list(iter_chromosomes(space, n_slots=3))) == sum(1 for ids in space if len(ids) <= 5)


# ---------------------------------------------------------------------------------------------------
# invalid options
# ---------------------------------------------------------------------------------------------------
def _without(kind: str) -> ModulesDB:
    data = primitives_json()
    data["modules"] = [m for m in data["modules"] if m["header"]["ID"] != kind]
    return ModulesDB.from_json_data(data, name=f"no_{kind}")


@pytest.mark.parametrize(
    ("kwargs", "path", "words"),
    [
        (dict(dof_min=4, dof_max=2), "$.dof_min", "larger than dof_max"),
        (dict(dof_min=-1), "$.dof_min", "negative"),
        (dict(dof_max=2.5), "$.dof_max", "integer"),
        (dict(max_links_between_joints=-2), "$.max_links_between_joints", "negative"),
        (dict(bases=("nope",)), "$.bases[0]", "unknown module ID"),
        (dict(bases=("J1",)), "$.bases[0]", "not a base"),
        (dict(end_effectors=("J1",)), "$.end_effectors[0]", "no 'eef' connector"),
        (dict(exclude=("J9",)), "$.exclude[0]", "unknown module ID"),
        (dict(first_modules=("J1", "nope")), "$.first_modules[1]", "unknown token"),
        (dict(successors=(("base", "J7"),)), "$.successors[0][1]", "unknown token"),
        (dict(successors=(("base",),)), "$.successors[0]", "pair"),
        (dict(joint_sequences=(("J1", "i_15"),)), "$.joint_sequences[0][1]", "joint modules"),
        (dict(joint_sequences=(("J1", "Jx"),)), "$.joint_sequences[0][1]", "unknown token"),
        (dict(joint_sequences=((),)), "$.joint_sequences[0]", "empty"),
        (dict(gap_patterns=(("J1",),)), "$.gap_patterns[0][0]", "links"),
        (dict(classes={"c": ("i_15", "zz")}), "$.classes.c[1]", "unknown module ID"),
        (dict(classes={"J1": ("i_15",)}), "$.classes", "also a module ID"),
        (dict(classes={"@c": ("i_15",)}), "$.classes", "'@'"),
        (dict(modules=("base",)), "$.modules[0]", "base or end effector"),
        (dict(dof_max=3), "$", "arbitrarily long"),
        (dict(bases="base"), "$.bases", "list"),
    ],
)
def test_invalid_options(primitives, kwargs, path, words):
    with pytest.raises(SearchSpaceError) as exc:
        SerialSpace(primitives, SpaceOptions(**kwargs))
    assert isinstance(exc.value, InputError)
    assert exc.value.path == path
    assert words in str(exc.value)


@pytest.mark.parametrize(("missing", "words"), [("base", "no usable base"), ("eef", "no usable end effector")])
def test_db_without_base_or_eef(missing, words):
    db = _without(missing)
    with pytest.raises(InputError, match=words):
        SerialSpace(db, dof_max=2, max_links_between_joints=0, max_links_after_last_joint=0)


def test_options_json_and_kwargs(primitives):
    o = SpaceOptions(
        dof_max=2,
        first_is_joint=True,
        max_links_between_joints=1,
        max_links_after_last_joint=0,
        classes={"i": ["i_15"]},
    )
    assert SpaceOptions.from_json(o.to_json()) == o
    with pytest.raises(SearchSpaceError, match="unknown option"):
        SpaceOptions.from_json({"dof_maxx": 3})
    a = SerialSpace(primitives, o)
    b = SerialSpace(primitives, **o.to_json())
    assert a.fingerprint == b.fingerprint and len(a) == len(b)
    with pytest.raises(TypeError):
        SerialSpace(primitives, o, dof_max=1)
    assert "SerialSpace" in repr(a)


def test_load_space_from_presets_files_dicts_and_options(robco, tmp_path):
    from timor_core.search import load_space, paper_exp2_options

    assert len(load_space("exp2", robco)) == len(load_space("auto", robco)) == 177_155
    options = {"dof_max": 1, "modules": ["J", "L_100"], "first_is_joint": True, "max_links_after_last_joint": 1}
    file = tmp_path / "space.json"
    file.write_text(json.dumps(options))
    spaces = [load_space(file, robco), load_space(str(file), robco), load_space(options, robco)]
    spaces.append(load_space(SpaceOptions.from_json(options), robco))
    assert [list(s.iter()) for s in spaces[1:]] == [list(spaces[0].iter())] * 3
    assert sorted(spaces[0].iter()) == [("base", "J", "L_100", "gripper"), ("base", "J", "gripper")]
    assert load_space(paper_exp2_options(), robco).options == paper_exp2_options()
    file.write_text(json.dumps({"dof_max": "two"}))
    with pytest.raises(SearchSpaceError, match="expected an integer") as info:
        load_space(file, robco)
    assert info.value.file == str(file) and info.value.path == "$.dof_max" and info.value.value == "two"
    with pytest.raises(InputError, match="unknown search space"):
        load_space("science2020", robco)
    with pytest.raises(FormatError, match="file not found"):
        load_space(tmp_path / "missing.json", robco)
