"""Family certificates passed between the workers of a parallel search (search.lessons): a worker learns every
other worker's lessons once and never its own, whatever the order the chunks run in; learnt certificates refuse
what the other worker's proofs refused, without a proof of their own, and nothing else; the search's answer with
two workers is the one-worker answer."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import reach_test_spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.model.assembly import ModuleAssembly
from timor_core.search import ExhaustiveSearch, FilterConfig, paper_exp2_space
from timor_core.search.filtering.family_proof import FamilyProofs, Lesson
from timor_core.search.filtering.filter_state import TaskContext
from timor_core.search.filtering.lessons import LessonInbox, LessonLog
from timor_core.search.spaces.cost_order import by_cost
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
DBS, _ = reach_test_spaces()


def test_a_replaced_worker_does_not_keep_the_log_growing():
    """The pool replaced worker 101 (its process gone) by 102: once 102 and 100 have returned, the log is cut to
    what they have not taken, and stays so as they go on; each still learns every lesson of the other's."""
    log = LessonLog(2)
    inboxes = {w: LessonInbox(origin=w) for w in (100, 101, 102)}
    recorders = {w: _Recorder() for w in inboxes}
    origins: list[int] = []  # per batch index, its worker

    def run(w: int) -> None:
        inboxes[w].take(recorders[w], log.pending())  # type: ignore[arg-type]
        log.add(w, [Lesson(0, (b"",), np.zeros((1, 3)), float(log.next))], inboxes[w].upto)
        origins.append(w)

    run(100), run(101), run(100)  # 101 took batch 0 only, and is gone
    for _ in range(20):
        run(102), run(100)
        assert len(log.pending()) <= 2, [b.index for b in log.pending()]
    assert recorders[100].taught == [float(i) for i, w in enumerate(origins) if w != 100]
    # 102 came after batch 0 was taken by every worker there was: it learns the others' lessons from batch 1 on
    # (not the last: made after its last run)
    assert recorders[102].taught == [float(i) for i, w in enumerate(origins[:-1]) if w != 102 and i >= 1]


class _Recorder:
    """Stands in for a worker's FamilyProofs: records what it is taught."""

    def __init__(self) -> None:
        self.taught: list[float] = []

    def learn(self, lessons: list[Lesson]) -> None:
        self.taught.extend(lesson.margin for lesson in lessons)


@settings(max_examples=60, deadline=None)
@given(workers=st.integers(1, 3), chunks=st.integers(1, 12), data=st.data())
def test_every_worker_learns_every_other_workers_lessons_once(workers, chunks, data):
    """Chunks sent with the log's pending batches, run by any worker in any order (up to 4 in flight), return
    with that worker's lessons (margin = a unique number): once everything is drained and each worker ran one more
    chunk, every worker was taught exactly the others' lessons, each once."""
    log = LessonLog(workers)
    inboxes = [LessonInbox(origin=100 + w) for w in range(workers)]
    recorders = [_Recorder() for _ in range(workers)]
    made: dict[int, list[float]] = {w: [] for w in range(workers)}
    inflight: list[list] = []
    counter = iter(range(10**6))

    def run(batches, w, teach=True):
        inboxes[w].take(recorders[w], batches)  # type: ignore[arg-type]
        n = data.draw(st.integers(0, 2)) if teach else 0
        lessons = [Lesson(0, (b"",), np.zeros((1, 3)), float(next(counter))) for _ in range(n)]
        made[w].extend(x.margin for x in lessons)
        log.add(inboxes[w].origin, lessons, inboxes[w].upto)

    for _ in range(chunks):
        inflight.append(log.pending())
        while len(inflight) > data.draw(st.integers(0, 4)) or (inflight and _ == chunks - 1):
            batches = inflight.pop(data.draw(st.integers(0, len(inflight) - 1)))
            run(batches, data.draw(st.integers(0, workers - 1)))
    for w in range(workers):  # one more chunk each, teaching nothing: all that was taught reaches everyone
        run(log.pending(), w, teach=False)
    for w in range(workers):
        others = sorted(m for v, ms in made.items() if v != w for m in ms)
        assert sorted(recorders[w].taught) == others


def _context(task_name: str) -> TaskContext:
    task = Task.from_json_data(json.loads((TASKS / f"{task_name}.json").read_text()))
    return TaskContext(task, DBS["robco_like"], "mass", FilterConfig())


def test_learnt_certificates_refuse_what_the_teacher_refused_without_a_proof():
    """Two workers' proofs on the first 400 assemblies of ``more_goals``' cost order: one proves, the other
    learns its lessons first; the learner refuses exactly the same assemblies with a fraction of the proofs."""
    ctx = _context("more_goals")
    db = DBS["robco_like"]
    teacher = FamilyProofs([(g.world, g.pose.tolerance) for g in ctx.goals], 4096, ctx.placement)
    teacher.share()  # start keeping lessons
    items = [ids for _, (_, ids) in zip(range(400), by_cost(paper_exp2_space(db), "mass"))]
    cuts = [teacher.cut(ModuleAssembly.from_serial_modules(db, ids)) for ids in items]
    taught = [teacher.refusal(c) is not None for c in cuts if c is not None]
    lessons = teacher.share()
    assert lessons and teacher.share() == []
    learner = FamilyProofs([(g.world, g.pose.tolerance) for g in ctx.goals], 4096, ctx.placement)
    learner.learn(lessons)
    learnt = [learner.refusal(learner.cut(ModuleAssembly.from_serial_modules(db, ids))) is not None for ids in items]
    assert learnt == taught
    assert sum(taught) > 300 and learner.proofs * 4 < teacher.proofs, (learner.proofs, teacher.proofs)


def test_two_workers_sharing_certificates_find_the_one_worker_optimum():
    """``moved_goals`` on experiment 2's space, cost order (the family filter on): the same optimum, cost and
    position in the cost order with 1 and 2 workers."""
    ctx = _context("moved_goals")
    space = paper_exp2_space(DBS["robco_like"])
    runs = [
        ExhaustiveSearch(space, "mass", workers=w, order="cost", progress=False).optimize(ctx.task, DBS["robco_like"])
        for w in (1, 2)
    ]
    one, two = runs
    assert one.found and (one.best_ids, one.best_cost, one.best_seq) == (two.best_ids, two.best_cost, two.best_seq)
