"""A local shard's end (s55-share): what it would free at its end is left to its process (``LocalHub.held``), and its
final tail keeps the keys a few ulps cheaper than its best, so that the parent counts the best's position from the
tails when another shard's best is the same mass summed in another order."""

from __future__ import annotations

import math
import multiprocessing
from pathlib import Path

from timor_core import ModulesDB
from timor_core.search import FilterConfig
from timor_core.search.evaluation.evaluate import DBRef, TaskRef
from timor_core.search.evaluation.parallel import WorkerSpec
from timor_core.search.exhaustive_search import local_shards, shard_mail, shard_worker
from timor_core.search.exhaustive_search.shard_worker import ShardJob, ShardState, run_shard
from timor_core.search.exhaustive_search.shards import rank_from_tails
from timor_core.search.spaces.space import SerialSpace, SpaceOptions
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
DB = ModulesDB.from_name("robco_like")


def test_a_local_shard_leaves_its_walk_and_tail_to_its_process():
    options = SpaceOptions(dof_min=3, dof_max=5, first_is_joint=True, modules=("J", "L_100", "L_150", "L_250"),
                           max_links_between_joints=1, max_links_after_last_joint=1)  # fmt: skip
    space = SerialSpace(DB, options)
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    spec = WorkerSpec(DBRef.of(DB), TaskRef.of(task), "mass", FilterConfig())
    ctx = multiprocessing.get_context()
    mail = shard_mail.Mailboxes.make(ctx, 1)
    states, held = [], []
    for keep in (None, held):
        best = ctx.Array("d", [math.inf, math.inf])
        hub = local_shards.LocalHub(0, best, mail, ctx.Queue(), held=keep)
        job = ShardJob(spec, options.canonical_json(), 0, 1, "token", "topic", fingerprint=space.fingerprint)
        states.append(ShardState.from_json(run_shard(job, hub)))
    plain, kept = states
    assert kept.best is not None and (kept.best.cost, kept.best.seq) == (plain.best.cost, plain.best.seq)
    assert (kept.taken, kept.tail) == (plain.taken, plain.tail)
    walk, tail = held  # (the walk's generator and the untrimmed tail, never freed in a shard's process)
    assert hasattr(walk, "__next__") and len(tail) >= len(kept.tail) and tail[-len(kept.tail) :] == kept.tail
    mail.close()


def _state(index: int, keys: list[tuple[float, int]], best: tuple[float, int] | None) -> ShardState:
    state = ShardState(index, taken=len(keys), tail=list(keys))
    state.trim_tail(best)
    return state


def test_a_tail_keeps_the_keys_a_few_ulps_below_its_best():
    """``obstacles_4``: shard 0 ends at its best of mass 13.88 before shard 1 finds 13.879999999999999 (the same
    modules' mass summed in another order): shard 0's keys of the lower mass after shard 1's best must stay in its
    tail, or its count before the best is unknown (the parent then walked the cost order again, 21-48 ms)."""
    low, high = 13.879999999999999, 13.88
    assert low == math.nextafter(high, 0.0)
    zero = [(12.5, k) for k in range(40)] + [
        (low, 70_000),
        (low, 90_000),
        (low, 175_018),
        (high, 21_072),
        (high, 50_426),
    ]
    one = [(12.6, k) for k in range(100, 130)] + [(low, 19_559), (low, 66_144)]
    states = [_state(0, zero, (high, 50_426)), _state(1, one, (low, 66_144))]
    assert states[0].tail[0] == (12.5, 39)  # (the last key more than a few ulps cheaper, as the count needs)
    assert rank_from_tails(states, 66_144) == 40 + 31  # (shard 0: its 40 cheaper keys; shard 1: 30 and 19,559)
    far = [_state(0, zero, (high, 50_426)), _state(1, [(10.0, 1), (11.0, 66_144)], (11.0, 66_144))]
    assert rank_from_tails(far, 66_144) is None  # (a best much cheaper: not known from the tail, walked as before)


def _hubs(k: int = 2) -> tuple:
    ctx = multiprocessing.get_context()
    mail, best = shard_mail.Mailboxes.make(ctx, k), ctx.Array("d", [math.inf, math.inf])
    places = ctx.RawArray("d", [-math.inf] * (2 * k))
    return mail, [local_shards.LocalHub(r, best, mail, ctx.Queue(), places) for r in range(k)]


def test_a_shard_says_where_it_walks_and_an_ended_one_takes_nothing_more():
    mail, hubs = _hubs(3)
    assert hubs[0].behind() == (-math.inf, -math.inf)  # (others not started: they may take anything)
    hubs[1].at((12.5, 7))
    hubs[2].at((11.0, 90))
    assert hubs[0].behind() == (11.0, 90) and hubs[2].behind() == (-math.inf, -math.inf)
    hubs[2].at((math.inf, math.inf))
    assert hubs[0].behind() == (12.5, 7)
    hubs[1].at((math.inf, math.inf))
    assert hubs[0].behind() is None
    mail.close()


def test_a_shard_ending_ahead_keeps_its_keys_from_where_the_other_still_walks():
    """The user study: shard 0 ends at its best, 11.08 kg, while shard 1 still walks at 11.02 and finds a best there
    later. Shard 0's final tail keeps its keys from where shard 1 was (its best comes no earlier): the parent counts
    the best's position from the tails (before, it walked the whole cost order again)."""
    mail, hubs = _hubs()
    zero = [(10.9, k) for k in range(50)] + [(11.0, 3)] + [(11.02, 70_000), (11.05, 5), (11.08, 67_876)]
    one = [(10.95, k) for k in range(200, 260)] + [(11.01, 20_492), (11.02, 67_743)]
    hubs[1].at((11.01, 20_492))  # (shard 1's batch starts there)
    hubs[0].best_array[0], hubs[0].best_array[1] = 11.08, 67_876  # (shard 0's own best, the only one known)
    end = shard_worker._trim_key(hubs[0])
    assert end == (11.01, 20_492) and hubs[1].behind() is None  # (shard 0 said it takes nothing more)
    states = [_state(0, zero, end), _state(1, one, (11.02, 67_743))]
    assert states[0].tail[0] == (11.0, 3)
    assert rank_from_tails(states, 67_743) == 51 + 61
    alone = [_state(0, zero, (11.08, 67_876)), states[1]]  # (trimmed at its own best, as before)
    assert rank_from_tails(alone, 67_743) is None
    mail.close()


class _HeldUp:
    """Shard 0's hub, held up after its ``moment``-th call of :func:`~.shard_worker._trim_key` (0: before any) while
    shard 1 publishes its best and ends (``other_ends``): each interleaving of the two shards' ends in turn."""

    def __init__(self, hub, moment: int, other_ends) -> None:
        self.hub, self.moment, self.other_ends, self.calls = hub, moment, other_ends, 0
        if moment == 0:
            other_ends()

    def _call(self, name: str, *args):
        out = getattr(self.hub, name)(*args)
        self.calls += 1
        if self.calls == self.moment:
            self.other_ends()
        return out

    def best(self):
        return self._call("best")

    def at(self, key):
        return self._call("at", key)

    def behind(self):
        return self._call("behind")


def test_a_shard_ending_while_the_other_ends_keeps_the_keys_before_the_others_best():
    """s55-review2: shard 0 (its best 11.08 kg) ends while shard 1, walking from 11.01, finds 11.02 kg, publishes it
    and ends. Whenever shard 0 is held up in its end, its trim key comes no later than shard 1's best, so the rank is
    counted from the tails. Fails when ``_trim_key`` reads the best before the places (held up after that read,
    shard 0 sees shard 1 ended but not its best: its tail is cut at 11.08 and the parent walks the cost order)."""
    zero = [(10.9, k) for k in range(50)] + [(11.0, 3), (11.02, 70_000), (11.05, 5), (11.08, 67_876)]
    one = [(10.95, k) for k in range(200, 260)] + [(11.01, 20_492), (11.02, 67_743)]
    for moment in range(4):
        mail, hubs = _hubs()
        hubs[1].at((11.01, 20_492))  # (shard 1's last batch starts there)
        hubs[0].best_array[0], hubs[0].best_array[1] = 11.08, 67_876

        def other_ends(hub=hubs[1]) -> None:
            hub.best_array[0], hub.best_array[1] = 11.02, 67_743  # (as ``LocalHub.found`` publishes it)
            hub.at((math.inf, math.inf))

        end = shard_worker._trim_key(_HeldUp(hubs[0], moment, other_ends))
        assert end is not None and end <= (11.02, 67_743), moment
        states = [_state(0, zero, end), _state(1, one, (11.02, 67_743))]
        assert rank_from_tails(states, 67_743) == 51 + 61, moment
        mail.close()


def test_a_shard_ending_with_no_best_trims_where_the_other_walks():
    mail, hubs = _hubs()
    hubs[1].at((11.01, 20_492))
    assert shard_worker._trim_key(hubs[0]) == (11.01, 20_492)  # (the other's best comes there or later)
    assert shard_worker._trim_key(hubs[1]) is None  # (all others ended, none found a best: the whole tail stays)
    mail.close()


def test_the_rank_needs_every_shard_to_have_reached_the_best():
    """s55-review2: a shard stopped by the deadline before the best's key, cancelled (its last report stands) or never
    started took only some of its keys before the best: the rank from its tail would count too few, so it is None
    (:func:`~.shards.cost_rank` counts the cost order). Fails when ``rank_from_tails`` counts such a shard's keys."""
    finder = ShardState(0, taken=3, tail=[(9.0, 1), (9.8, 2), (10.0, 5)], stopped="found")
    early = [(8.0, 4), (9.5, 8)]
    for stopped, nxt, expect in [
        ("max_time", (9.6, 10), None),  # (its keys from 9.6 to the best not taken)
        ("max_time", (10.5, 10), 2 + 2),  # (stopped past the best: every key before it taken)
        ("bound", (10.0, 7), 2 + 2),
        (None, None, None),  # (a cancelled shard's last report)
        ("exhausted", None, 2 + 2),
    ]:
        other = ShardState(1, taken=2, tail=list(early), stopped=stopped, next=nxt)
        assert rank_from_tails([finder, other], 5) == expect, stopped
    unstarted = ShardState(1)
    assert rank_from_tails([finder, unstarted], 5) is None
    assert rank_from_tails([finder, ShardState(1, stopped="exhausted")], 5) == 2
