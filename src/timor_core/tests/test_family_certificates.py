"""The family certificates' look-up screened by the compiled cover step (``search.filtering.family_certificates``):
the same answers, and the same certificate remembered, as numpy's look-up alone."""

from types import SimpleNamespace

import numpy as np
import pytest

from timor_core.search.filtering import cover_kernel
from timor_core.search.filtering.family_certificates import Certificates, distance


def _cut(translations: np.ndarray) -> SimpleNamespace:
    """What the look-up reads of a ``family_proof.Cut``: its translations, their rows and its rotations' count."""
    rows = tuple(tuple(r) for r in translations.tolist())
    return SimpleNamespace(translations=translations, rows=rows, rotations=(b"",) * len(translations))


@pytest.mark.parametrize("seed", range(6))
def test_the_compiled_screen_changes_no_look_up(seed):
    """Chains at, just inside and just outside a certificate's margin (within 1e-12 m, far below the screen's slack),
    far from all, and covered by several: with the screen every look-up answers as numpy's alone and the two keep
    the same certificate as the last that covered."""
    kernel = cover_kernel.kernel()
    if kernel is None:
        pytest.skip("the cover kernel is not built here")
    rng = np.random.default_rng(seed)
    gaps = int(rng.integers(1, 9))
    screened, plain = Certificates(gaps, 64), Certificates(gaps, 64)
    answers = []
    for step in range(400):
        if step % 7 == 0 or not plain.size:  # a new certificate, the same for both
            t, margin = rng.normal(size=(gaps, 3)) * 0.3, float(rng.uniform(0.01, 0.3))
            screened.add(t, margin)
            plain.add(t, margin)
            continue
        k = int(rng.integers(plain.size))
        base, margin = plain.points[k].copy(), float(plain.margins[k])
        shift = rng.normal(size=(gaps, 3))
        kind = step % 4
        if kind == 0:  # far from every certificate
            cut = base + shift * 10.0
        else:  # at the margin, by 1e-12 m inside or outside, or on it (to the rounding of the scaling)
            target = margin + (0.0, -1e-12, 1e-12)[kind - 1]
            unit = shift / max(distance(shift.tolist(), np.zeros((gaps, 3)).tolist()), 1e-300)
            cut = base + unit * target
        cut = _cut(np.ascontiguousarray(cut))
        answer = screened.covers(cut, kernel)
        assert answer == plain.covers(cut), (seed, step)
        assert (screened.last, screened.size) == (plain.last, plain.size)
        answers.append(answer)
    assert any(answers) and not all(answers)  # (both kinds of answer were tested)
