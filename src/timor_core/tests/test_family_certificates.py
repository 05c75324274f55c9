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


@pytest.mark.parametrize("gaps", range(1, 10))
def test_the_compiled_screen_changes_no_look_up(gaps):
    """Chains at, just inside and just outside a certificate's margin (within 1e-12 m, far below the screen's slack),
    far from all, and covered by several (certificates made next to others); 1-9 gaps (numpy's pairwise sum from 8
    on); a small cap, so that the older half is forgotten: with the screen every look-up answers as numpy's alone and
    the two keep the same certificate as the last that covered, the same size and the same forgettings."""
    kernel = cover_kernel.kernel()
    if kernel is None:
        pytest.skip("the cover kernel is not built here")
    rng = np.random.default_rng(gaps)
    screened, plain = Certificates(gaps, 8), Certificates(gaps, 8)
    answers, several = [], 0
    for step in range(400):
        if step % 7 == 0 or not plain.size:  # a new certificate, the same for both; every other one beside the last
            t = rng.normal(size=(gaps, 3)) * 0.3
            if plain.size and step % 14 == 0:
                t = plain.points[plain.size - 1] + rng.normal(size=(gaps, 3)) * 0.01
            margin = float(rng.uniform(0.01, 0.3))
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
        d = np.sqrt(((plain.points[: plain.size] - cut) ** 2).sum(axis=2)).sum(axis=1)
        several += int((d < plain.margins[: plain.size]).sum() > 1)
        cut = _cut(np.ascontiguousarray(cut))
        answer = screened.covers(cut, kernel)
        assert answer == plain.covers(cut), (gaps, step)
        assert (screened.last, screened.size, screened.forgotten) == (plain.last, plain.size, plain.forgotten)
        answers.append(answer)
    assert any(answers) and not all(answers)  # (both kinds of answer were tested)
    assert several and plain.forgotten  # (cuts covered by several certificates, and the older half forgotten)


def test_a_cut_of_another_family_size_is_refused():
    """A cut with more gaps than the certificates is an error with the screen as without it (the kernel would read
    past the rows)."""
    kernel = cover_kernel.kernel()
    if kernel is None:
        pytest.skip("the cover kernel is not built here")
    certs = Certificates(3, 8)
    certs.add(np.zeros((3, 3)), 0.1)
    cut = _cut(np.zeros((4, 3)))
    with pytest.raises(ValueError):
        certs.covers(cut, kernel)
    with pytest.raises(ValueError):
        certs.covers(cut)
