"""Random number generators from user-given seeds: an int >= 0, a numpy Generator, or None (fresh entropy)."""

from __future__ import annotations

import numpy as np

from timor_core.errors import InputError

__all__ = ["as_generator"]


def as_generator(seed: np.random.Generator | int | None, what: str = "seed") -> np.random.Generator:
    """A numpy Generator for ``seed``; a negative, fractional or non-numeric seed is an InputError naming ``what``.

    numpy refuses negative seeds with a bare ValueError; this says which argument was wrong.
    """
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise InputError(f"{what} must be an integer >= 0 or a numpy Generator", value=seed)
    if seed < 0:
        raise InputError(f"{what} must be an integer >= 0", value=seed)
    return np.random.default_rng(int(seed))
