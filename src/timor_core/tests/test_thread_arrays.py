"""The per-thread output arrays of the compiled proofs (search/filtering/thread_arrays.py): reused while they are
long enough, grown to at least twice their rows when not, of the shapes and types asked for, one set per key and
per thread (the kernels run without the GIL). That the proofs copy out what they keep before the next call is
test_sweep_fused's and test_proof_fused's (proofs started from an earlier proof's boxes, compared bit for bit)."""

from __future__ import annotations

import threading

import numpy as np

from timor_core.search.filtering.thread_arrays import thread_arrays

TYPES = (np.float64, np.float64, np.bool_)


def test_arrays_are_reused_while_long_enough_and_grown_twofold():
    first = thread_arrays(("test", 3), 10, (3, 0, 0), TYPES)
    assert [a.shape for a in first] == [(10, 3), (10,), (10,)]
    assert [a.dtype for a in first] == [np.float64, np.float64, np.bool_]
    assert all(a is b for a, b in zip(first, thread_arrays(("test", 3), 7, (3, 0, 0), TYPES), strict=True))
    grown = thread_arrays(("test", 3), 11, (3, 0, 0), TYPES)
    assert all(a is not b for a, b in zip(first, grown, strict=True))
    assert [a.shape for a in grown] == [(20, 3), (20,), (20,)]
    assert thread_arrays(("test", 3), 50, (3, 0, 0), TYPES)[0].shape == (50, 3)  # (more than twice: what is asked)
    assert thread_arrays(("test", 4), 5, (4, 0, 0), TYPES)[0].shape == (5, 4)  # (another key: its own)


def test_each_thread_has_its_own_arrays():
    mine = thread_arrays(("test", 2), 8, (2, 0, 0), TYPES)
    theirs: list = []
    worker = threading.Thread(target=lambda: theirs.extend(thread_arrays(("test", 2), 8, (2, 0, 0), TYPES)))
    worker.start()
    worker.join()
    assert len(theirs) == 3 and all(a is not b for a, b in zip(mine, theirs, strict=True))
    assert all(a is b for a, b in zip(mine, thread_arrays(("test", 2), 8, (2, 0, 0), TYPES), strict=True))
