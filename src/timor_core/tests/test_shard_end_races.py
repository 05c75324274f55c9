"""The two local shards' ends in every interleaving (s55-review2): whatever order their steps take (a batch's place
written, the best read before an assembly, a best published, the end's reads of places and best), the best is the
least valid key and its rank counted from the final tails is the number of keys before it in the whole cost order;
with the places (``LocalHub.at``/``behind``) the tails always reach back far enough (no walk of the cost order);
without them (a Dask hub) the rank is the true one or None (then walked)."""

from __future__ import annotations

import math
import multiprocessing

from hypothesis import example, given, settings
from hypothesis import strategies as st

from timor_core.search.exhaustive_search import local_shards, shard_mail, shard_worker
from timor_core.search.exhaustive_search.shard_worker import ShardState
from timor_core.search.exhaustive_search.shards import rank_from_tails

HIGH = 13.88
COSTS = (12.5, math.nextafter(HIGH, 0.0), HIGH, math.nextafter(HIGH, 20.0), 14.0)  # (ulps apart: sums in other orders)
BATCH = 2


class _NoPlaces:
    """A hub that knows no places (as :class:`~.shard_worker.DaskHub`)."""

    def __init__(self, hub) -> None:
        self.best = hub.best


class _Driving:
    """A shard's hub at its end: before each call, the other shard takes ``steps()`` steps (an interleaving)."""

    def __init__(self, hub, steps, places: bool) -> None:
        self.hub, self.steps = hub, steps
        if places:
            self.at, self.behind = self._wrap("at"), self._wrap("behind")

    def _wrap(self, name: str):
        def call(*args):
            self.steps()
            return getattr(self.hub, name)(*args)

        return call

    def best(self):
        self.steps()
        return self.hub.best()


def _shard(r: int, keys: list, valid: set, hub, out: dict, places: bool, other):
    """Shard ``r``'s walk of its keys, one step a ``yield``; its final state in ``out[r]``."""
    state, mine = ShardState(r), [k for k in keys if k[1] % 2 == r]
    for b in range(0, len(mine), BATCH):
        if places:
            hub.at(mine[b])
        yield
        for key in mine[b : b + BATCH]:
            best = hub.best()
            yield
            if best is not None and key > best:
                state.stopped, state.next = "bound", key
                break
            state.tail.append(key)
            state.taken += 1
            if key[1] in valid:
                state.stopped = "found"
                with hub.best_array.get_lock():
                    if key < (hub.best_array[0], hub.best_array[1]):
                        hub.best_array[0], hub.best_array[1] = key[0], float(key[1])
                yield
                break
        if state.stopped is not None:
            break
    state.stopped = state.stopped or "exhausted"
    end = _Driving(hub, other, places) if places else _Driving(_NoPlaces(hub), other, False)
    state.trim_tail(shard_worker._trim_key(end))
    out[r] = state


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(COSTS), st.booleans()), min_size=1, max_size=24),
    st.lists(st.integers(0, 3), max_size=80),
    st.booleans(),
)
@example([(12.5, False), (13.88, True), (COSTS[1], False), (COSTS[1], True)], [0, 0, 0, 0, 0, 0, 3, 1], True)
# shard 0 ends at its best of 14 kg; held up in its end, shard 1 publishes 13.88 kg and ends (read the best before the
# places and shard 0 cuts its tail at 14 kg: the rank is not counted from the tails)
@example([(14.0, True), (12.5, False), (COSTS[3], False), (HIGH, True), (12.5, False)], [0] * 8 + [5, 0], True)
# no places: shard 0's tail is cut at 14 kg, a key after shard 1's best dropped (the rank is None, then walked)
@example([(14.0, True), (12.5, False), (COSTS[3], False), (HIGH, True), (COSTS[3], False)], [0] * 8, False)
def test_the_best_and_its_rank_in_every_interleaving_of_two_shards(picks, schedule, places):
    keys = sorted((c, i) for i, (c, _) in enumerate(picks))
    valid = {i for i, (_, v) in enumerate(picks) if v}
    ctx = multiprocessing.get_context()
    mail, best = shard_mail.Mailboxes.make(ctx, 2), ctx.Array("d", [math.inf, math.inf])
    hubs = [local_shards.LocalHub(r, best, mail, None, ctx.RawArray("d", [-math.inf] * 4)) for r in range(2)]
    hubs[1].places = hubs[0].places
    out: dict = {}
    plan = iter(schedule)
    walks: list = [None, None]

    def steps_of(r: int):  # the other shard's steps while shard ``1 - r`` is at its end (not when it ends too)
        def steps() -> None:
            for _ in range(next(plan, 0)):
                if walks[r] is None or walks[r].gi_running or next(walks[r], StopIteration) is StopIteration:
                    return

        return steps

    walks[0] = _shard(0, keys, valid, hubs[0], out, places, steps_of(1))
    walks[1] = _shard(1, keys, valid, hubs[1], out, places, steps_of(0))
    live = [0, 1]
    while live:  # (the schedule's turns, then round robin)
        r = live[next(plan, len(out)) % len(live)]
        if next(walks[r], StopIteration) is StopIteration:
            live.remove(r)
    mail.close()
    states = [out[0], out[1]]
    found = [k for k in keys if k[1] in valid]
    if not found:
        assert all(s.stopped == "exhausted" for s in states) and best[0] == math.inf
        return
    least = found[0]
    assert (best[0], int(best[1])) == least  # (the answer: the least valid key)
    rank = rank_from_tails(states, least[1])
    truth = sum(1 for k in keys if k < least)
    assert rank == truth if places else rank in (None, truth)
