"""The chromosome of the genetic search: one gene per module slot (base, joint/link slots, end effector),
decoding, encoding, validity (a chain that connects, the DOF in range), random chromosomes, repair, mutation
and crossover. A mixin of GeneticSearch; it uses the search's ``db``, ``base``, ``eef``, ``joints``, ``links``,
``gene_space``, ``n_slots``, ``min_dof``, ``max_dof``, ``mutation_probability`` and ``_dof``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from timor_core.errors import InputError
from timor_core.search.spaces.iterator import canonical

__all__ = ["ChromosomeCoding", "EMPTY"]

EMPTY = ""  # the empty slot in decoded chromosomes (module IDs are never empty)


class ChromosomeCoding:
    """Chromosome coding of a GeneticSearch (mixed into it; not used alone)."""

    db: Any
    base: Any
    eef: Any
    joints: Any
    links: Any
    gene_space: Any
    n_slots: Any
    min_dof: Any
    max_dof: Any
    mutation_probability: Any
    _dof: Any

    def _pick(self, given: str | None, modules, what: str) -> str:
        ids = [m.id for m in modules]
        if given is not None:
            if given not in ids:
                raise InputError(f"{given!r} is not a {what} of the module set {self.db.name!r} ({ids})", value=given)
            return given
        if len(ids) != 1:
            raise InputError(
                f"the module set {self.db.name!r} has {len(ids)} {what} modules {ids}; choose one", value=ids
            )
        return ids[0]

    def genes_to_slots(self, genes: Sequence[int] | np.ndarray) -> tuple[str, ...]:
        """The chromosome as module IDs per slot (``EMPTY`` for empty slots)."""
        out = []
        for k, g in enumerate(genes):
            g = int(g)
            options = self.joints if k % 2 == 0 else self.links
            out.append(options[g - 1] if g > 0 else EMPTY)
        return tuple(out)

    def decode(self, genes: Sequence[int] | np.ndarray) -> tuple[str, ...]:
        """The assembly a chromosome stands for: ``(base, ..., eef)`` with the empty slots dropped."""
        return (self.base, *canonical(self.genes_to_slots(genes), EMPTY), self.eef)

    def encode(self, ids: Sequence[str]) -> np.ndarray | None:
        """The chromosome of a design ``(base, ..., eef)`` (the inverse of :meth:`decode`), or None if there is none.

        Joints go into the next even (joint) slot, links into the next odd (link) slot, leaving the skipped slot
        empty; a design with another base or end effector, a module the slots may not hold, a link first or more
        modules than the slots take has no chromosome.
        """
        ids = tuple(ids)
        if len(ids) < 2 or ids[0] != self.base or ids[-1] != self.eef:
            return None
        genes = np.zeros(self.n_slots, dtype=int)
        k = 0
        for m in ids[1:-1]:
            if m in self.joints:
                k += k % 2
                index = self.joints.index(m)
            elif m in self.links and k > 0:
                k += 1 - k % 2
                index = self.links.index(m)
            else:
                return None
            if k >= self.n_slots:
                return None
            genes[k] = index + 1
            k += 1
        return genes if genes[0] > 0 and self.decode(genes) == ids else None

    def is_valid(self, ids: Sequence[str]) -> bool:
        """A joint, min_dof <= DOF <= max_dof, and every neighbour pair connects (exactly one free way)."""
        dof = sum(self._dof[m] for m in ids)
        if not any(m in self.joints for m in ids) or not self.min_dof <= dof <= self.max_dof:
            return False
        used = self.db[ids[0]].base_connectors[0].id
        for a, b in zip(ids, ids[1:]):
            options = [cb for ca, cb in self.db.connections_between(a, b) if ca != used]
            if len(options) != 1:
                return False
            used = options[0]
        return True

    def random_chromosome(self, rng: np.random.Generator) -> np.ndarray:
        """A random chromosome with a DOF in ``min_dof .. max_dof`` (when it fits; rejection sampled)."""
        for _ in range(100):
            genes = np.array([rng.choice(space) for space in self.gene_space], dtype=int)
            self._repair(genes, rng)
            if self.is_valid(self.decode(genes)):
                return genes
        return genes

    def _repair(self, genes: np.ndarray, rng: np.random.Generator) -> None:
        """Empty random joint slots (never the first) until the DOF is at most ``max_dof``."""
        while True:
            ids = [self.joints[g - 1] for g in genes[0::2] if g > 0]
            if sum(self._dof[m] for m in ids) <= self.max_dof:
                return
            full = [k for k in range(2, len(genes), 2) if genes[k] > 0]
            if not full:
                return
            genes[int(rng.choice(full))] = 0

    def mutation_operator(self, rng: np.random.Generator):
        """pygad mutation: each gene redrawn from its slot's space with mutation_probability, then repaired."""

        def mutate(offspring: np.ndarray, ga: Any) -> np.ndarray:
            for child in offspring:
                for k, space in enumerate(self.gene_space):
                    if rng.random() < self.mutation_probability:
                        child[k] = rng.choice(space)
                self._repair(child, rng)
            return offspring

        return mutate

    def crossover_operator(self, rng: np.random.Generator):
        """Single-point crossover at a slot boundary: slot k keeps its kind, so children stay in the gene spaces."""

        def cross(parents: np.ndarray, offspring_size: tuple[int, int], ga: Any) -> np.ndarray:
            out = np.empty(offspring_size, dtype=int)
            n = len(parents)
            for i in range(offspring_size[0]):
                a, b = parents[i % n], parents[(i + 1) % n]
                cut = int(rng.integers(1, self.n_slots)) if self.n_slots > 1 else 1
                out[i, :cut], out[i, cut:] = a[:cut], b[cut:]
            return out

        return cross
