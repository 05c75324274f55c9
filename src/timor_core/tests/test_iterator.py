"""Lazy assembly iterators of the configuration search (timor_core.search)."""

from __future__ import annotations

import gc
import itertools
import json
import random
import time
import tracemalloc

import pytest

from timor_core import InputError, ModuleAssembly
from timor_core.search import (
    AssemblyIterator,
    SearchSpaceError,
    SerialSpace,
    SpaceOptions,
    paper_exp2_space,
    science2019_options,
    science2019_space,
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
