"""The funnel of a filter chain: per filter, how many assemblies entered and passed, why the others failed and
the time spent; mergeable across workers and printable as a table."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError, InputError

__all__ = ["Funnel"]


# -- the funnel -----------------------------------------------------------------------------------


class Funnel:
    """Per filter: how many assemblies entered, passed, why the others failed, and the time spent (s).

    ``record(evaluation)`` counts one finished evaluation (its ``failed_filter``, ``reason_key`` and
    ``timings``); funnels of several workers ``merge``.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names: list[str] = list(names)
        self.entered: dict[str, int] = dict.fromkeys(self.names, 0)
        self.passed: dict[str, int] = dict.fromkeys(self.names, 0)
        self.reasons: dict[str, Counter[str]] = {n: Counter() for n in self.names}
        self.time: dict[str, float] = dict.fromkeys(self.names, 0.0)

    def record(self, failed_filter: str | None, reason_key: str = "", timings: Sequence[float] = ()) -> None:
        """Count one candidate that failed at ``failed_filter`` (None: passed every filter)."""
        entered, passed, spent, n = self.entered, self.passed, self.time, len(timings)
        for k, name in enumerate(self.names):
            entered[name] += 1
            if k < n:
                spent[name] += timings[k]
            if name == failed_filter:
                self.reasons[name][reason_key] += 1
                return
            passed[name] += 1

    def record_failure(self, failed_filter: str, reason_key: str, seconds: float) -> None:
        """:meth:`record` of a candidate that failed at ``failed_filter`` in ``seconds``, the filters before it in no
        time (a look-up's refusal, counted for every assembly it refuses: without the timings' loop)."""
        entered, passed = self.entered, self.passed
        for name in self.names:
            entered[name] += 1
            if name == failed_filter:
                self.reasons[name][reason_key] += 1
                self.time[name] += seconds
                return
            passed[name] += 1

    def record_failures(self, failed_filter: str, reasons: dict[str, int], seconds: float) -> None:
        """:meth:`record_failure` of as many candidates as ``reasons`` counts per reason key, in ``seconds`` in all
        (a batch of look-ups' refusals)."""
        n = sum(reasons.values())
        entered, passed = self.entered, self.passed
        for name in self.names:
            entered[name] += n
            if name == failed_filter:
                self.reasons[name].update(reasons)
                self.time[name] += seconds
                return
            passed[name] += n

    def record_evaluation(self, ev: Any) -> None:
        """Count an :class:`~.evaluate.Evaluation`."""
        self.record(ev.failed_filter, ev.reason_key, ev.timings)

    def merge(self, other: Funnel) -> Funnel:
        """Add another funnel's counts (same filters) to this one; returns self."""
        if other.names != self.names:
            raise InputError("cannot merge funnels of different filter chains", value=other.names)
        for n in self.names:
            self.entered[n] += other.entered[n]
            self.passed[n] += other.passed[n]
            self.reasons[n].update(other.reasons[n])
            self.time[n] += other.time[n]
        return self

    def failed(self, name: str) -> int:
        return self.entered[name] - self.passed[name]

    def pass_rate(self, name: str) -> float:
        """Share of the assemblies entering this filter that passed it (nan if none entered)."""
        e = self.entered[name]
        return self.passed[name] / e if e else math.nan

    @property
    def total(self) -> int:
        """Candidates counted."""
        return self.entered[self.names[0]] if self.names else 0

    @property
    def valid(self) -> int:
        """Candidates that passed every filter."""
        return self.passed[self.names[-1]] if self.names else 0

    def rows(self) -> list[dict]:
        """One dict per filter (name, entered, passed, failed, pass_rate, time, reasons most common first),
        ready for a funnel plot."""
        return [
            {
                "name": n,
                "entered": self.entered[n],
                "passed": self.passed[n],
                "failed": self.failed(n),
                "pass_rate": self.pass_rate(n),
                "time": self.time[n],
                "reasons": dict(self.reasons[n].most_common()),
            }
            for n in self.names
        ]

    def to_json(self) -> dict:
        return {
            "filters": [
                {
                    "name": n,
                    "entered": self.entered[n],
                    "passed": self.passed[n],
                    "time": self.time[n],
                    "reasons": dict(self.reasons[n].most_common()),
                }
                for n in self.names
            ]
        }

    @classmethod
    def from_json(cls, data: Any, path: str = "$") -> Funnel:
        """A funnel from its JSON (:meth:`to_json`); FormatError/ValidationError naming the JSON path below
        ``path`` for anything else (a result or checkpoint file is input: it may have been edited)."""
        rows = jf.array(_field(data, "filters", path), f"{path}.filters")
        names: list[str] = []
        for i, row in enumerate(rows):
            at = f"{path}.filters[{i}]"
            name = jf.string(_field(row, "name", at), f"{at}.name")
            if name in names:
                raise FormatError("a filter named twice", path=f"{at}.name", value=name)
            names.append(name)
        f = cls(names)
        for i, (n, r) in enumerate(zip(names, rows)):
            at = f"{path}.filters[{i}]"
            f.entered[n] = jf.count(_field(r, "entered", at), f"{at}.entered")
            f.passed[n] = jf.count(_field(r, "passed", at), f"{at}.passed")
            f.time[n] = jf.number(r.get("time", 0.0), f"{at}.time", min_value=0.0)
            reasons = jf.obj(r.get("reasons", {}), f"{at}.reasons")
            f.reasons[n] = Counter({str(k): jf.count(v, f"{at}.reasons.{k}") for k, v in reasons.items()})
        return f

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Funnel):
            return NotImplemented
        return (self.names, self.entered, self.passed, self.reasons) == (
            other.names,
            other.entered,
            other.passed,
            other.reasons,
        )

    __hash__ = None  # type: ignore[assignment]

    def summary(self) -> str:
        """A readable table: per filter entered → passed (rate) and the most common reasons."""
        lines = []
        for r in self.rows():
            rate = "-" if math.isnan(r["pass_rate"]) else f"{100 * r['pass_rate']:.1f}%"
            reasons = ", ".join(f"{k} ×{v}" for k, v in list(r["reasons"].items())[:3])
            lines.append(
                f"{r['name']:>12}: {r['entered']:>8} → {r['passed']:>8} ({rate:>6}, {r['time']:.2f} s)"
                + (f"  {reasons}" if reasons else "")
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Funnel({', '.join(f'{n} {self.passed[n]}/{self.entered[n]}' for n in self.names)})"


def _field(data: Any, key: str, path: str) -> Any:
    """A required field of the object at ``path`` (missing: a FormatError naming that path and the key)."""
    return jf.req(jf.obj(data, path), key, path)
