#!/usr/bin/env python3
# ruff: noqa: E402, N812  (an ad hoc measurement script: patches made between the imports, short module aliases)
"""Per-shard timeline of one cost-ordered search (issue 38 item 1): where a 2-worker search's time goes.

    TIMOR_COMPILED=1 TL_CPU=1 python benchmarks/shard_timeline.py TASK.json 2   # CPU-s per shard (TL_CPU unset: wall)
    TIMOR_COMPILED=1 TL_CPU=1 python benchmarks/shard_timeline.py TASK.json 1   # the one-process search's parts

Ad hoc: it patches the shard loop's functions (local_shards, shard_worker, batch_decide, the evaluator) before the
search, and the shards inherit the patches (fork). Per shard: start-up marks, walk, batched look-up, full evaluations
(with and without a proof), certificate exchange, proofs made, evaluations after the final best (overrun), when the
best was first seen. Measurement only: nothing here changes what the search does.
"""

import json
import os
import shutil
import sys
import tempfile
import time
import time as _t
from pathlib import Path

CLK = _t.process_time if os.environ.get("TL_CPU") else _t.monotonic
T0 = CLK()
from timor_core import ModulesDB
from timor_core.paper.experiments import exp2_space
from timor_core.search import ExhaustiveSearch, FilterConfig
from timor_core.search.exhaustive_search import local_shards as LS
from timor_core.search.exhaustive_search import shard_mail as SM
from timor_core.search.exhaustive_search import shard_worker as SW
from timor_core.search.filtering import batch_decide as BD
from timor_core.task.feedback import load_task

# one folder for the parent and its shard processes (a spawned shard imports this file anew: the environment carries
# the parent's folder to it); the parent removes it at its end
OUT = Path(os.environ.setdefault("SHARD_TIMELINE_OUT", tempfile.mkdtemp(prefix="shard-timeline-")))

R: dict = {}


def mark(name):
    R.setdefault("marks", []).append((name, CLK(), time.process_time()))


def acc(name, dt):
    R[name] = R.get(name, 0.0) + dt


orig_start = LS._start_shard


def _start_shard(n, fn, job, results, shared):
    R.clear()
    R["shard"] = n
    R["mods0"] = sorted(sys.modules)
    mark("forked")
    orig_start(n, fn, job, results, shared)


LS._start_shard = _start_shard

orig_we = SW.worker_evaluator


def worker_evaluator(spec):
    t = CLK()
    ev = orig_we(spec)
    acc("t_evaluator", CLK() - t)
    return ev


SW.worker_evaluator = worker_evaluator
orig_space = SW.shard_space


def shard_space(spec, opts):
    t = CLK()
    s = orig_space(spec, opts)
    acc("t_space", CLK() - t)
    return s


SW.shard_space = shard_space

orig_bci = SW.by_cost_indexed


def timed_walk(it):
    """``it``'s items, the time spent in ``next`` added to the walk's."""
    while True:
        t = CLK()
        try:
            x = next(it)
        except StopIteration:
            acc("t_walk", CLK() - t)
            return
        acc("t_walk", CLK() - t)
        yield x


def by_cost_indexed(*a, **k):
    it = orig_bci(*a, **k)
    mark("walk_made")

    return timed_walk(it)


SW.by_cost_indexed = by_cost_indexed

orig_refused = BD.BatchLookup.refused


def refused(self, *a, **k):
    t = CLK()
    out = orig_refused(self, *a, **k)
    acc("t_batch_lookup", CLK() - t)
    R["n_batch_refused"] = R.get("n_batch_refused", 0) + out[0]
    return out


BD.BatchLookup.refused = refused

orig_ex = SM.MailLink.exchange


def exchange(self, final=False):
    t = CLK()
    before = len(self.proofs.certificates)
    orig_ex(self, final)
    acc("t_exchange", CLK() - t)
    R["learnt_keys"] = R.get("learnt_keys", 0) + len(self.proofs.certificates) - before


SM.MailLink.exchange = exchange

orig_step = SW._Walk.step


def step(self, price, index, ids):
    if "first_step" not in R:
        mark("first_step")
    ev = self.evaluator
    fp = ev.chain.ctx.family_proofs
    p0 = fp.proofs if fp is not None else 0
    n0 = self.state.evaluations
    t = CLK()
    best = self.hub.best()
    if best is not None and "best_seen" not in R:
        R["best_seen"] = (CLK(), list(best))
    stopped = orig_step(self, price, index, ids)
    dt = CLK() - t
    fp = ev.chain.ctx.family_proofs
    p1 = fp.proofs if fp is not None else 0
    if self.state.evaluations > n0:
        R.setdefault("steps", []).append((price, index, dt, p1 - p0, CLK()))
    R["first_step"] = 1
    return stopped


SW._Walk.step = step

orig_ls = LS.run_shard


def run_shard(job, hub=None):
    mark("run_shard")
    try:
        out = orig_ls(job, hub)
        mark("run_shard_end")
        return out
    finally:
        mark("end")
        fp = SW.worker_evaluator(job.spec).chain.ctx.family_proofs
        R["proofs"] = fp.proofs if fp is not None else 0
        R["cert_keys"] = sum(c.size for c in fp.certificates.values()) if fp is not None else 0
        R["best_final"] = hub.best()
        R["newmods"] = sorted(set(sys.modules) - set(R.pop("mods0")))
        (OUT / f"{R['shard']}.json").write_text(json.dumps(R, default=str))


LS.run_shard = run_shard


from timor_core.search.filtering import family_proof as FP

_FPS = []
_orig_fpinit = FP.FamilyProofs.__init__


def _fpinit(self, *a, **k):
    _orig_fpinit(self, *a, **k)
    _FPS.append(self)


FP.FamilyProofs.__init__ = _fpinit


from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.exhaustive_search import exhaustive as EX

_orig_bc = EX.by_cost


def _bc(*a, **k):
    it = _orig_bc(*a, **k)

    return timed_walk(it)


EX.by_cost = _bc
_orig_call = Evaluator.__call__


def _call(self, *a, **k):
    t = CLK()
    fp = self.chain.ctx.family_proofs
    p0 = fp.proofs if fp is not None else 0
    out = _orig_call(self, *a, **k)
    fp = self.chain.ctx.family_proofs
    p1 = fp.proofs if fp is not None else 0
    kind = (
        "proof"
        if p1 > p0
        else (
            "cert"
            if out.failed_filter == "family" and out.timings and len(out.timings) == 4
            else "other:" + str(out.failed_filter)
        )
    )
    acc("t_call_" + kind, CLK() - t)
    R["n_call_" + kind] = R.get("n_call_" + kind, 0) + 1
    return out


_orig_evref = Evaluator.refused


def _evref(self, *a, **k):
    t = CLK()
    out = _orig_evref(self, *a, **k)
    if out is not None:
        acc("t_evref", CLK() - t)
        R["n_evref"] = R.get("n_evref", 0) + 1
    else:
        acc("t_evref_miss", CLK() - t)
    return out


Evaluator.refused = _evref
Evaluator.__call__ = _call


from timor_core.search.exhaustive_search import shards as SH

P = []


def pmark(name):
    P.append((name, _t.monotonic()))


for cls, meth in ((SH._Run, "launch"), (SH._Run, "wait"), (LS.LocalShards, "close"), (LS.LocalShards, "__init__")):

    def wrap(orig, name):
        def f(*a, **k):
            pmark(name + "<")
            try:
                return orig(*a, **k)
            finally:
                pmark(name + ">")

        return f

    setattr(cls, meth, wrap(getattr(cls, meth), cls.__name__ + "." + meth))
_orig_lss = LS.local_sharded_search


def _lss(*a, **k):
    pmark("lss<")
    return _orig_lss(*a, **k)


EX_lss = _lss
orig_sr = SH.sharded_result


def _sr(*a, **k):
    pmark("result<")
    return orig_sr(*a, **k)


SH.sharded_result = _sr
_orig_put = LS._shard_process


def _sp(n, fn, job, results):
    _orig_put(n, fn, job, results)


LS._shard_process = _sp


_orig_walk = SW._walk


def _walkw(*a, **k):
    try:
        return _orig_walk(*a, **k)
    finally:
        mark("walk_end")


SW._walk = _walkw


def main(task_path, workers):
    db = ModulesDB.from_name("robco_like")
    task = load_task(task_path, False)
    space = exp2_space(db)
    s = ExhaustiveSearch(space, "mass", FilterConfig(seed=0), workers=workers, progress=False, order="cost")
    t = CLK()
    c = time.process_time()
    res = s.optimize(task, db, None)
    t1 = CLK()
    print(
        f"{Path(task_path).stem} w={workers} wall {t1 - t:.3f} parent cpu {time.process_time() - c:.3f} "
        f"evals {res.evaluations} best {res.best_cost} seq {res.best_seq} cpu(sum) {res.cpu_time:.3f}"
    )
    if workers == 1:
        print(
            "  ",
            {
                k: (round(v, 3) if isinstance(v, float) else v)
                for k, v in sorted(R.items())
                if k.startswith(("t_", "n_"))
            },
        )
        print(
            "  proofs", sum(f.proofs for f in _FPS), "certs", sum(c.size for f in _FPS for c in f.certificates.values())
        )
    if P:
        print("  parent:", ", ".join(f"{n} {x - t:.3f}" for n, x in P))
    for f in sorted(OUT.glob("*.json")):
        d = json.loads(f.read_text())
        m = {k: (tt - t, cc) for k, tt, cc in d["marks"]}
        steps = d.get("steps", [])
        best = d["best_final"]
        over = [s_ for s_ in steps if best and (s_[0], s_[1]) > tuple(best)]
        seen = d.get("best_seen")

        full = sum(s_[2] for s_ in steps)
        proofsteps = [s_ for s_ in steps if s_[3] > 0]
        print(
            "  ",
            {
                k: (round(v, 3) if isinstance(v, float) else v)
                for k, v in sorted(d.items())
                if k.startswith(("t_", "n_"))
            },
        )
        print(f" shard {d['shard']}: " + ", ".join(f"{k} {v[0]:.3f}s (cpu {v[1]:.2f})" for k, v in m.items()))
        print(
            f"   evaluator {d.get('t_evaluator', 0):.3f} space {d.get('t_space', 0):.3f} walk {d.get('t_walk', 0):.3f} "
            f"batch_lookup {d.get('t_batch_lookup', 0):.3f} ({d.get('n_batch_refused', 0)} refused) "
            f"exchange {d.get('t_exchange', 0):.3f} learnt {d.get('learnt_keys', 0)} steps {len(steps)} "
            f"in {full:.3f}s, with proofs {len(proofsteps)} in {sum(s_[2] for s_ in proofsteps):.3f}s "
            f"proofs {d['proofs']} overrun {len(over)} in {sum(s_[2] for s_ in over):.3f}s "
            f"best seen at {(seen[0] - t) if seen else None}"
        )
    print("   new modules", [json.loads(f.read_text()).get("newmods") for f in sorted(OUT.glob("*.json"))])
    print("   certs per shard", [json.loads(f.read_text())["cert_keys"] for f in sorted(OUT.glob("*.json"))])


if __name__ == "__main__":
    try:
        main(sys.argv[1], int(sys.argv[2]))
    finally:
        shutil.rmtree(OUT, ignore_errors=True)
