"""Lazy assembly iterators of the configuration search (timor_core.search)."""

from __future__ import annotations

import copy
import gc
import itertools
import json
import random
import time
import tracemalloc

import pytest
from conftest import primitives_json

from timor_core import InputError, ModuleAssembly, ModulesDB
from timor_core.errors import ConnectorError, FormatError
from timor_core.search import (
    AssemblyIterator,
    SearchSpaceError,
    SerialSpace,
    SpaceOptions,
    canonical,
    iter_chromosomes,
    paper_exp2_space,
    science2019_options,
    science2019_space,
    to_chromosome,
)

IMPROV_REAL = ("4", "5", "14", "15")
IMPROV_EXT = ("6", "7", "8")


# ---------------------------------------------------------------------------------------------------
# the two published spaces
# ---------------------------------------------------------------------------------------------------
def _science2019_reference() -> set[tuple[str, ...]]:
    """The 32,768 robots built independently of the iterator, straight from the paper's rules."""
    gaps = [(r,) for r in IMPROV_REAL]
    gaps += [(e, r) for e in IMPROV_EXT for r in IMPROV_REAL] + [(r, e) for r in IMPROV_REAL for e in IMPROV_EXT]
    gaps += [(e1, r, e2) for e1 in IMPROV_EXT for r in IMPROV_REAL for e2 in IMPROV_EXT]
    tails = [()] + [(e,) for e in IMPROV_EXT]
    assert len(gaps) == 64
    out = set()
    for j1, j2, j3 in (("21", "21", "23"), ("21", "21", "21")):
        for g1, g2, t in itertools.product(gaps, gaps, tails):
            out.add(("1", j1, *g1, j2, *g2, j3, *t, "12"))
    return out


def test_science2019_space_count_distinct_and_valid(improv):
    space = science2019_space(improv)
    assert len(space) == 32768 == space.count
    assert space.count_by("dof") == {6: 32768}
    seen = set()
    n = 0
    for ids in space:
        n += 1
        seen.add(ids)
    assert n == 32768 and len(seen) == 32768
    assert seen == _science2019_reference()
    for ids in random.Random(2019).sample(sorted(seen), 500):
        A = ModuleAssembly.from_serial_modules(improv, ids)
        assert A.dof == 6
        assert ids[0] == "1" and ids[-1] == "12"


def test_science2019_is_pure_options(improv):
    # the factory is nothing but generic options: rebuilding from their JSON gives the same space
    opt = science2019_options()
    again = SerialSpace(improv, SpaceOptions.from_json(json.loads(json.dumps(opt.to_json()))))
    assert again.fingerprint == science2019_space(improv).fingerprint
    assert again[12345] == science2019_space(improv)[12345]


def test_science2019_speed_and_memory(improv):
    space = science2019_space(improv)
    best = 0.0
    for _ in range(3):
        t0 = time.perf_counter()
        n = sum(1 for _ in space)
        best = max(best, n / (time.perf_counter() - t0))
    assert best >= 200_000, f"{best:.0f} assemblies/s"
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        n = 0
        for _ in space.iter():
            n += 1
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert n == 32768
    assert peak < 2_000_000, f"iterating grew memory by {peak} bytes"


def test_science2019_resume(improv):
    space = science2019_space(improv)
    full = list(space)
    it = space.iter()
    head = list(itertools.islice(it, 1000))
    state = json.loads(json.dumps(it.state()))
    assert head + list(space.iter(resume=state)) == full


def test_exp2_count_without_iterating(robco, monkeypatch):
    space = paper_exp2_space(robco)

    def no_iteration(*args, **kwargs):
        raise AssertionError("counting must not enumerate the space")

    monkeypatch.setattr(type(space), "__iter__", no_iteration)
    monkeypatch.setattr(type(space), "iter", no_iteration)
    assert len(space) == 177155  # a DP over ~60 states, not an enumeration
    assert space.count_by("dof") == {n: 11**n for n in range(1, 6)}


def test_exp2_full_iteration(robco):
    # measured: ~0.1 s to iterate all 177,155 (far below the 5 s budget, so not marked slow)
    space = paper_exp2_space(robco)
    t0 = time.perf_counter()
    every = list(space)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0
    assert len(every) == len(set(every)) == 177155
    links = {m.id for m in robco.links}
    rng = random.Random(2)
    for ids in rng.sample(every, 5000):
        assert ids[0] == "base" and ids[1] == "J" and ids[-1] == "gripper"
        mid = ids[1:-1]
        assert 1 <= mid.count("J") <= 5
        assert all(not (a in links and b in links) for a, b in zip(mid, mid[1:]))  # <= 1 link per gap/tail
    for ids in rng.sample(every, 200):
        assert ModuleAssembly.from_serial_modules(robco, ids).dof == ids.count("J")


def test_exp2_memory_flat(robco):
    space = paper_exp2_space(robco)
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        n = sum(1 for _ in space)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert n == 177155 and peak < 1_000_000


# ---------------------------------------------------------------------------------------------------
# resumable state, slices, random access
# ---------------------------------------------------------------------------------------------------
def test_resume_after_1000_equals_uninterrupted_run(robco):
    space = paper_exp2_space(robco)
    it = space.iter()
    first = [next(it) for _ in range(1000)]
    state = it.state()
    text = json.dumps(state)
    assert len(text) < 200
    resumed = AssemblyIterator(space, resume=json.loads(text))
    rest = list(resumed)
    assert first + rest == list(space)
    assert len(rest) == 177155 - 1000
    assert resumed.state()["next"] == 177155 and list(space.iter(resume=resumed.state())) == []


def test_resume_anywhere_and_chained(robco):
    space = paper_exp2_space(robco)
    full = list(space)
    rng = random.Random(7)
    for p in [0, 1, 255, 256, 257, 177154, 177155] + rng.sample(range(len(full)), 12):
        it = space.iter()
        for _ in range(p):
            next(it)
        assert list(itertools.islice(space.iter(resume=it.state()), 30)) == full[p : p + 30]
    # a chain of interruptions gives the uninterrupted run
    out, state = [], None
    while True:
        it = space.iter(resume=state) if state else space.iter()
        chunk = list(itertools.islice(it, rng.randint(1, 40000)))
        if not chunk:
            break
        out += chunk
        state = it.state()
    assert out == full


def test_shards_and_random_access(robco):
    space = paper_exp2_space(robco)
    full = list(space)
    bounds = [0, 5, 1000, 60000, 100001, 177155]
    shards = [list(space.iter(start=a, stop=b)) for a, b in zip(bounds, bounds[1:])]
    assert sum(shards, []) == full
    sharded = space.iter(start=10, stop=20)
    next(sharded)
    assert list(space.iter(resume=sharded.state())) == full[11:20]
    for i in random.Random(3).sample(range(len(full)), 300) + [0, len(full) - 1]:
        assert space[i] == full[i]
        assert space.index(full[i]) == i
        assert full[i] in space
    assert space[-1] == full[-1]
    with pytest.raises(IndexError):
        space[177155]
    assert ("base", "J", "L_100", "L_100", "gripper") not in space  # two links in a row
    assert ("base", "L_100", "J", "gripper") not in space  # joint first
    assert ("base", "J") not in space and "base" not in space
    with pytest.raises(ValueError):
        space.index(("base", "J", "J", "J", "J", "J", "J", "gripper"))  # 6 DOF
    sample = space.sample(50, seed=1)
    assert len(set(sample)) == 50 and all(s in space for s in sample)


def test_bad_resume_states(robco, primitives):
    space = paper_exp2_space(robco)
    other = SerialSpace(
        primitives, dof_max=2, first_is_joint=True, max_links_between_joints=0, max_links_after_last_joint=0
    )
    state = space.iter().state()
    for bad in (
        other.iter().state(),
        {**state, "version": 99},
        {**state, "next": -1},
        {**state, "next": 10**9},
        {**state, "stop": "x"},
        "not a state",
    ):
        with pytest.raises(SearchSpaceError) as exc:
            space.iter(resume=bad)
        assert isinstance(exc.value, InputError)
    with pytest.raises(SearchSpaceError):
        space.iter(start=-1)


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
