"""numba's on-disk cache for kernels that call into other files: keyed by those files' text too.

Why: numba caches a compiled function in files named by its module and qualified name, and before loading them
checks only that function's own source file (time stamp and size) and bytecode; the compiled functions it calls are
compiled into its machine code. Where one of those lives in another file and changes (``box_bounds.cos_sin`` under
``sweep_bound._collisions``), numba loads the old machine code: stale bounds, as a build once took stale helpers
(s49). :func:`keyed` gives a kernel a qualified name that ends in a digest of the files it calls into: after a
change there numba looks under another name, finds nothing and compiles anew (the old files are left unread). Nothing
here imports numba.
"""

from __future__ import annotations

import hashlib
import types
from collections.abc import Iterable
from pathlib import Path

__all__ = ["keyed", "sources_digest"]


def sources_digest(sources: Iterable[Path]) -> str:
    """12 hex digits of a hash of the files' text, in the order given."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:12]


def keyed(function: types.FunctionType, sources: Iterable[Path]) -> types.FunctionType:
    """A copy of ``function`` (the same code, globals, defaults and closure) whose qualified name ends in
    :func:`sources_digest` of ``sources`` (the files of the kernels it calls): what to give numba's ``njit(cache=True)``
    so that its cache is never read after one of those files changed."""
    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__, copy.__doc__ = function.__kwdefaults__, function.__doc__
    copy.__qualname__ = f"{function.__qualname__}_{sources_digest(sources)}"
    return copy
