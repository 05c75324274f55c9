"""SerialSpace: a search space of serial assemblies, compiled to a small automaton and counted by DP.

The options (:class:`~.rules.SpaceOptions`) are compiled once into a finite automaton (:mod:`.automaton`: states
that summarise what the rules need to know of a chain prefix, dead ones pruned, each state's completions counted by
a dynamic programme, without enumerating). The counts give a bijection between ``range(len(space))`` and the
assemblies (``space[i]``, ``space.index(ids)``): resumable iteration.
"""

from __future__ import annotations

import hashlib
import random
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from typing import Any

from timor_core.errors import InputError
from timor_core.model.db import ModulesDB
from timor_core.search.spaces.automaton import MAX_STATES, SpaceCompiler, post_order
from timor_core.search.spaces.iterator import AssemblyIterator
from timor_core.search.spaces.rules import SearchSpaceError, SpaceOptions, resolve

__all__ = ["SerialSpace", "SpaceArgumentError", "SpaceIndexError", "MAX_STATES", "post_order"]


class SpaceArgumentError(InputError, TypeError):
    """A :class:`SerialSpace` given arguments of the wrong kind: an index that is not an integer, options twice."""


class SpaceIndexError(InputError, IndexError):
    """An index outside a :class:`SerialSpace` (an IndexError too, so sequence iteration stops)."""


class SerialSpace:
    """All serial assemblies of a module set that obey a :class:`SpaceOptions`, in a fixed order.

    ``len(space)`` (or ``space.count`` for spaces beyond ``sys.maxsize``) is computed by dynamic
    programming, without enumerating. Iteration is lazy and memory-flat; ``space[i]`` and
    ``space.index(ids)`` map between positions and assemblies; :meth:`iter` gives a resumable
    :class:`~.iterator.AssemblyIterator`. Every assembly is a tuple of module IDs, base first, end
    effector last, accepted by ``ModuleAssembly.from_serial_modules``.
    """

    def __init__(self, db: ModulesDB, options: SpaceOptions | None = None, **kwargs: Any) -> None:
        if options is not None and kwargs:
            raise SpaceArgumentError("give either a SpaceOptions or keyword options, not both", value=sorted(kwargs))
        self.db = db
        self.options = options if options is not None else SpaceOptions(**kwargs)
        self.rules = resolve(db, self.options)
        self._auto = SpaceCompiler(db, self.rules, self.options).compile()
        digest = hashlib.sha256()
        digest.update(self.options.canonical_json().encode())
        digest.update(("\0" + db.name + "\0" + "\0".join(db.ids)).encode())
        self.fingerprint = digest.hexdigest()[:16]

    # -- size --------------------------------------------------------------------------------------
    @property
    def count(self) -> int:
        """The number of assemblies (exact, any size)."""
        return self._auto.total

    def __len__(self) -> int:
        return self._auto.total

    @property
    def n_states(self) -> int:
        """Live states of the compiled automaton (a measure of the rules' complexity, not of the space)."""
        return self._auto.live_states

    def __repr__(self) -> str:
        return f"SerialSpace(db={self.db.name!r}, count={self.count}, options={self.options.to_json()})"

    # -- iteration ---------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[tuple[str, ...]]:
        return self.iter()

    def iter(self, start: int = 0, stop: int | None = None, resume: dict | None = None):
        """A resumable iterator over positions ``start`` .. ``stop - 1`` (or continuing a saved ``state()``)."""
        return AssemblyIterator(self, start=start, stop=stop, resume=resume)

    # -- random access -----------------------------------------------------------------------------
    def __getitem__(self, i: int) -> tuple[str, ...]:
        n = self.count
        if isinstance(i, bool) or not isinstance(i, int):
            raise SpaceArgumentError("space indices must be integers", value=type(i).__name__)
        if i < 0:
            i += n
        if not 0 <= i < n:
            raise SpaceIndexError(f"index {i} out of range for a space of {n} assemblies", value=i)
        auto = self._auto
        s, out = 1, []
        while s:
            cum = auto.cum[s]
            k = bisect_right(cum, i) - 1
            i -= cum[k]
            m, s = auto.trans[s][k]
            out.append(m)
        return tuple(out)

    def index(self, ids: Sequence[str]) -> int:
        """The position of an assembly; ValueError if it is not in the space."""
        auto = self._auto
        s, i = 1, 0
        for m in ids:
            k = auto.pos[s].get(str(m)) if s else None
            if k is None:
                raise SearchSpaceError(f"{tuple(ids)!r} is not in this search space", value=list(ids))
            i += auto.cum[s][k]
            s = auto.trans[s][k][1]
        if s != 0:
            raise SearchSpaceError(f"{tuple(ids)!r} is not in this search space (incomplete chain)", value=list(ids))
        return i

    def __contains__(self, ids: object) -> bool:
        if isinstance(ids, str) or not isinstance(ids, Sequence):
            return False
        try:
            self.index(ids)  # type: ignore[arg-type]
        except ValueError:
            return False
        return True

    def sample(self, k: int, seed: int | random.Random | None = None) -> list[tuple[str, ...]]:
        """``k`` distinct assemblies drawn uniformly (without replacement), in random order."""
        rng = seed if isinstance(seed, random.Random) else random.Random(seed)
        return [self[i] for i in rng.sample(range(self.count), k)]

    def count_by(self, key: str = "dof") -> dict[int, int]:
        """How many assemblies have each number of degrees of freedom (``key="dof"``) or modules
        (``key="length"``), by DP over the automaton, without enumerating."""
        if key not in ("dof", "length"):
            raise SearchSpaceError("key must be 'dof' or 'length'", value=key)
        auto = self._auto
        weight = {m.id: (m.dof if key == "dof" else 1) for m in self.db}
        memo: dict[int, dict[int, int]] = {0: {0: 1}}

        def dist(s: int) -> dict[int, int]:
            d = memo.get(s)
            if d is None:
                d = {}
                for m, b in auto.trans[s]:
                    w = weight[m]
                    for v, c in dist(b).items():
                        d[v + w] = d.get(v + w, 0) + c
                memo[s] = d
            return d

        return dict(sorted(dist(1).items()))
