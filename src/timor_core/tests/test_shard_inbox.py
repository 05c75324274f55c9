"""A local shard takes the certificates that came from the other shards before each proof (``FamilyProofs.inbox``,
set by ``shard_mail.MailLink``): a chain another shard proved during this shard's evaluation is refused by a look-up,
not proven again (s55-share)."""

from __future__ import annotations

import multiprocessing

import numpy as np
from proof_robots import DBS, assembly_of

from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search.exhaustive_search import shard_mail
from timor_core.search.filtering.family_proof import FamilyProofs, cut_chain

TOLERANCE = tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, np.pi / 4]])


def _proven(seed: int = 3) -> tuple:
    """A chain (its cut) of the embedded sets and a goal its proof refuses with a margin (a certificate), the goal
    ~1 m beyond the chain's reach at q = 0."""
    rng = np.random.default_rng(seed)
    for k in range(200):
        assembly, placement = assembly_of(sorted(DBS)[k % 2], float(rng.uniform()), rng, 0.3)
        cut = cut_chain(assembly, placement)
        if cut is None:
            continue
        goal = np.eye(4)
        goal[:3, 3] = rng.normal(size=3)
        goal[:3, 3] *= (1.0 + float(np.abs(cut.translations).sum())) / np.linalg.norm(goal[:3, 3])
        probe = FamilyProofs([(goal, TOLERANCE)], 4096)
        found = probe.refusal(cut)
        if found is not None and found.boxes and probe.certificates[0, cut.rotations].size:
            return cut, goal
    raise AssertionError("no chain proven out of reach")


def _two_shards(goal: np.ndarray) -> tuple:
    mail = shard_mail.Mailboxes.make(multiprocessing.get_context(), 2)
    proofs = [FamilyProofs([(goal, TOLERANCE)], 4096) for _ in range(2)]
    return mail, proofs, [shard_mail.MailLink(p, r, mail) for r, p in enumerate(proofs)]


def test_a_certificate_that_came_during_an_evaluation_refuses_before_a_proof():
    cut, goal = _proven()
    mail, proofs, links = _two_shards(goal)
    mine = proofs[0].refusal(cut)
    assert mine is not None and mine.boxes > 0 and proofs[0].proofs == 1
    links[0].exchange()  # (sent; shard 1 has not looked at its mail since)
    assert (0, cut.rotations) not in proofs[1].certificates
    theirs = proofs[1].refusal(cut)  # (taken before its proof: the same goal, by a look-up)
    assert theirs is not None and (theirs.goal, theirs.boxes) == (mine.goal, 0)
    assert proofs[1].proofs == 0 and links[1].taken[0] == 1
    for link in links:
        link.close()
    assert proofs[1].inbox is None  # (a closed link is not read)
    mail.close()


def test_with_nothing_come_the_proof_runs():
    cut, goal = _proven()
    mail, proofs, links = _two_shards(goal)
    assert links[1].receive() is False
    found = proofs[1].refusal(cut)
    assert found is not None and found.boxes > 0 and proofs[1].proofs == 1
    for link in links:
        link.close()
    mail.close()


def _chain_not_of(family: tuple, seed: int = 5):
    """A cut of the embedded sets whose chain is of another family than ``family`` (no certificate of it covers)."""
    rng = np.random.default_rng(seed)
    for k in range(200):
        assembly, placement = assembly_of(sorted(DBS)[k % 2], float(rng.uniform()), rng, 0.3)
        cut = cut_chain(assembly, placement)
        if cut is not None and cut.rotations != family:
            return cut
    raise AssertionError("no chain of another family")


def test_a_certificate_that_came_refuses_only_the_chains_it_covers():
    """s55-review2: what came is read before the proof, but refuses only a chain a certificate covers: another
    family's chain is proven as without it. Fails when anything that came refuses the chain."""
    cut, goal = _proven()
    other = _chain_not_of(cut.rotations)
    mail, proofs, links = _two_shards(goal)
    assert proofs[0].refusal(cut) is not None
    links[0].exchange()
    found = proofs[1].refusal(other)
    assert links[1].taken[0] == 1 and (0, cut.rotations) in proofs[1].certificates  # (read before its proof)
    assert proofs[1].proofs == 1 and (found is None or found.boxes > 0)  # (its own proof's answer, no look-up's)
    for link in links:
        link.close()
    mail.close()
