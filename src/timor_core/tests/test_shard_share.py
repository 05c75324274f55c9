"""The family certificates shared between the shards of a Dask search (search.shard_share): they travel exactly
(through msgpack, as Dask sends them), and a FamilyProofs that learned another's lessons refuses what that one
refused by a look-up, with no proof of its own. (On a cluster: test_dask_search_shards.py, more_goals.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.exhaustive_search.shard_share import decode, encode
from timor_core.search.filtering.family_proof import FamilyProofs
from timor_core.search.filtering.filter_state import TaskContext
from timor_core.search.spaces.cost_order import by_cost
from timor_core.task import Task
from timor_core.task.feedback import task_base_placement

TASKS = Path(__file__).parent / "data" / "exp2_tasks"


def _cuts(task: Task, db: ModulesDB, n: int) -> list:
    placement = task_base_placement(task)
    proofs = FamilyProofs([], 1, placement)
    out = []
    for k, (_, ids) in enumerate(by_cost(paper_exp2_space(db), "mass", base_placement=placement)):
        if k >= n:
            break
        cut = proofs.cut(ModuleAssembly.from_serial_modules(db, ids, base_placement=placement))
        if cut is not None:
            out.append(cut)
    return out


def test_learned_certificates_refuse_by_look_up_what_the_prover_refused():
    msgpack = pytest.importorskip("msgpack")  # what Dask serialises events with
    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_data(json.loads((TASKS / "more_goals.json").read_text()))
    ctx = TaskContext(task, db, "mass", FilterConfig(family_proof=True))
    goals = [(g.world, g.pose.tolerance) for g in ctx.goals]  # as the family filter gives them
    assert len(goals) == 4
    cuts = _cuts(task, db, 400)
    prover = FamilyProofs(goals, ctx.config.proof_budget, ctx.placement)
    assert prover.share() == []  # from now on it keeps what it learns
    refused = [prover.refusal(cut) is not None for cut in cuts]
    assert sum(refused) >= 100 and prover.proofs > 0
    lessons = prover.share()
    sent = msgpack.unpackb(msgpack.packb({"batch": encode(lessons)}))  # as an event's message
    entries = decode(sent["batch"])
    assert len(entries) == len(lessons) > 0
    for got, want in zip(entries, lessons, strict=True):
        assert (got.goal, got.rotations) == (want.goal, want.rotations)
        assert got.margin == want.margin
        assert np.array_equal(got.translations, want.translations)
    learner = FamilyProofs(goals, ctx.config.proof_budget, ctx.placement)
    learner.share()
    learner.learn(entries)
    for cut, was in zip(cuts, refused, strict=True):
        found = learner.refusal(cut)
        if was:
            assert found is not None and found.boxes == 0  # by a certificate
    assert learner.proofs == 0  # what the prover decided needs no proof here
    assert learner.share() == []  # what it was taught it does not pass on again
