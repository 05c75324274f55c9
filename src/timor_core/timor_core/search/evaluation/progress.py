"""The progress bar of a search: assemblies per second, best cost, pass rate per filter (tqdm; silent without it)."""

from __future__ import annotations

import time

from timor_core.search.filtering.filters import Funnel

__all__ = ["Progress"]

_SHORT = {
    "assembly": "asm",
    "bound": "bnd",
    "limits": "lim",
    "robot": "rob",
    "workspace": "ws",
    "ik": "ik",
    "ik_task": "task",
    "torques": "tau",
    "joint_limits": "q",
}


class Progress:
    """A tqdm bar (assemblies/s, best cost, pass rate per filter); silent without tqdm or when disabled."""

    def __init__(self, total: int | None, enabled: bool = True, desc: str = "search") -> None:
        self.bar = None
        self._last = 0.0
        if not enabled:
            return
        try:
            from tqdm.auto import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency
            return
        self.bar = tqdm(total=total, unit="asm", desc=desc, smoothing=0.05, dynamic_ncols=True, mininterval=0.25)

    def update(self, n: int, funnel: Funnel, best: float | None, force: bool = False) -> None:
        if self.bar is None:
            return
        self.bar.update(n)
        now = time.monotonic()
        if force or now - self._last > 0.5:
            self._last = now
            rates = " ".join(
                f"{_SHORT.get(name, name)}:{100 * funnel.pass_rate(name):.0f}%"
                for name in funnel.names
                if funnel.entered[name]
            )
            best_text = "-" if best is None else f"{best:.4g}"
            self.bar.set_postfix_str(f"best={best_text} {rates}", refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
