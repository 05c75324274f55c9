"""The sweep path's shortcuts (issue 38 item 1, s51): the body's bound skipping links and balls beyond every
obstacle gives the verdicts of the bound without them (numba's compilation, the ahead-built kernel and numpy, on
boxes around configurations where the arm meets obstacle boxes); a chain's steps made from its joints' part once
(``proof_chain.joint_steps``) are the steps it makes itself; and the family's witness checked once per chain
(``sweep_proof.witness_ends``) ends a certificate where the certificate with the witness would end, and changes
nothing else. The soundness of the bound itself is ``test_sweep_proof``'s."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from conftest import anywhere_configuration
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import DBS, ROBOTS, assembly_of, boxes_around, obstacle_task

from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search.filtering import sweep_bound, sweep_fused, sweep_proof
from timor_core.search.filtering.box_bounds import trig_table
from timor_core.search.filtering.proof_chain import PoseChain, chain_of_steps, chain_to_tcp, joint_steps
from timor_core.search.filtering.proof_kernel import ahead_kernel, use_compiled

#: experiment 2's goal tolerance: 1 mm, 45 degrees
EXP2 = tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, math.pi / 4]])


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    """The tests below run the compiled kernels; the rest of the suite gets the default rule."""
    yield
    use_compiled(None)


@functools.cache
def _jit_collisions():
    """numba's compilation of the body's bound (its helpers compiled too), once per process."""
    jit = sweep_fused.numba_jit(cache=True)
    return jit(sweep_bound.py_kernels(jit)["collisions"])


def chain_angles(sweep, q) -> np.ndarray:
    """The chain's angles at the robot's configuration ``q`` (a merged joint's: its joints' angles, signed)."""
    q = np.asarray(q, dtype=float)
    return np.array([float(np.dot(sweep.signs[sweep.groups == g], q[sweep.groups == g]))
                     for g in range(sweep.chain.dof)])  # fmt: skip


def _compare(name, pick, seed, spread, width, margin, python=False) -> tuple[int, int]:
    """Boxes of joint angles at and around two configurations the obstacle boxes were placed at (so that many are
    refused, and links both near and far from every obstacle), some whole turns: the compiled bound (numba's and the
    ahead-built kernel; ``python``: its Python source instead) gives numpy's verdicts; the boxes refused and drawn."""
    rng = np.random.default_rng(seed)
    robot = assembly_of(name, pick, rng, spread)[0].robot
    sweep = sweep_proof.arm_sweep(robot)
    if sweep is None:
        return 0, 0
    n = sweep.chain.dof
    at = [anywhere_configuration(robot, rng) for _ in range(2)]
    obstacles = sweep_proof.obstacle_boxes(obstacle_task([b for q in at for b in boxes_around(robot, q, rng, 2)]))
    angles = np.array([chain_angles(sweep, q) for q in at])
    centres = np.concatenate([angles[rng.integers(2, size=48)] + rng.normal(scale=0.2, size=(48, n)),
                              rng.uniform(-math.pi, math.pi, (16, n))])  # fmt: skip
    half = rng.uniform(0.0, width, centres.shape)
    half[rng.random(len(half)) < 0.1] = math.pi
    want = sweep_proof.certain_collision_numpy(sweep, obstacles, centres, half, margin)
    use_compiled(True)
    kernels = [sweep_bound.py_kernels()["collisions"]] if python else [_jit_collisions(), ahead_kernel("collisions")]
    for kernel in (k for k in kernels if k is not None):
        out = np.zeros(len(centres), dtype=np.bool_)
        rotations, translations, points, links, _ = sweep.staged
        kernel(rotations, translations, centres, half, points, links, sweep.need(margin), *obstacles.staged, out,
               trig_table())  # fmt: skip
        assert (out == want).all(), (name, pick, seed, np.flatnonzero(out != want))
    return int(want.sum()), len(want)


@settings(max_examples=30, deadline=None)
@given(**ROBOTS, width=st.sampled_from([0.0, 0.02, 0.2, 1.0]), margin=st.sampled_from([0.0, 0.03]))
def test_the_body_bounds_skips_change_no_verdict(name, pick, seed, spread, width, margin):
    """The compiled bound, which skips a link whose balls all lie beyond every obstacle and a ball beyond every
    obstacle before its moves are summed, gives the verdicts of numpy's, which skips nothing (:func:`_compare`)."""
    _compare(name, pick, seed, spread, width, margin)


def test_the_body_bounds_skips_change_no_verdict_where_many_are_refused():
    """As above for 24 fixed draws: the same verdicts, and at least 1 box in 10 refused (the comparison is not
    empty)."""
    rng = np.random.default_rng(51)
    refused = drawn = 0
    for k in range(24):
        name = sorted(DBS)[k % len(DBS)]
        got = _compare(name, float(rng.random()), int(rng.integers(2**31)), [0.0, 0.3][k % 2], [0.02, 0.2][k // 2 % 2],
                       [0.0, 0.03][k // 4 % 2])  # fmt: skip
        refused, drawn = refused + got[0], drawn + got[1]
    assert drawn >= 24 * 32 and refused * 10 >= drawn, (refused, drawn)


def test_the_body_bounds_skips_are_taken(monkeypatch):
    """The skips the tests above check for soundness are taken (a change that stopped them would pass those): on
    fixed draws, the bound run in Python culls some links at some boxes (``_cull``) and leaves out some balls
    before their moves are summed (``_near``), with numpy's verdicts."""
    counts = {"culled": 0, "links": 0, "far": 0, "balls": 0}
    cull, near = sweep_bound._cull, sweep_bound._near

    def counted_cull(frames, origins, hull, ob_c, radius, culled, w):
        cull(frames, origins, hull, ob_c, radius, culled, w)
        counts["culled"], counts["links"] = counts["culled"] + int(culled.sum()), counts["links"] + len(culled)

    def counted_near(w, need, ob_c, radius):
        found = near(w, need, ob_c, radius)
        counts["far"], counts["balls"] = counts["far"] + (not found), counts["balls"] + 1
        return found

    monkeypatch.setattr(sweep_bound, "_cull", counted_cull)
    monkeypatch.setattr(sweep_bound, "_near", counted_near)
    rng = np.random.default_rng(7)
    for k in range(6):
        name = sorted(DBS)[k % len(DBS)]
        _compare(name, float(rng.random()), int(rng.integers(2**31)), 0.0, 0.2, 0.0, python=True)
    assert 0 < counts["culled"] < counts["links"] and 0 < counts["far"] < counts["balls"], counts


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(1, 6))
def test_steps_from_the_joints_part_are_the_chains_steps(seed, n):
    """Random joints (origins, unit axes) and two TCPs: the steps a chain makes from its joints' part made once
    (``chain_to_tcp(..., joint_steps(...))``) are, to the last bit, those the same chain makes itself (its lazy
    ``steps``), and they put the joints and the TCP where they are (``chain_of_steps``, to rounding)."""
    rng = np.random.default_rng(seed)
    origins = rng.normal(scale=0.4, size=(n, 3))
    axes = rng.normal(size=(n, 3))
    axes /= np.linalg.norm(axes, axis=1)[:, None]
    wrist = rng.uniform(0.0, 1.0, n)
    joints = joint_steps(origins, axes)
    for _ in range(2):
        tcp = np.eye(4)
        tcp[:3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        tcp[:3, 3] = rng.normal(scale=0.5, size=3)
        eager = chain_to_tcp(origins, axes, wrist, tcp, joints)
        lazy = PoseChain(*(getattr(eager, f) for f in ("origins", "axes", "tcp", "radii", "wrist_radii", "offset")))
        assert all(a.tobytes() == b.tobytes() for a, b in zip(eager.__dict__["steps"], lazy.steps, strict=True))
        again = chain_of_steps(*eager.steps)
        assert np.allclose(again.origins, origins, atol=1e-12) and np.allclose(again.tcp, tcp, atol=1e-12)


def test_a_goal_moved_in_place_is_a_new_goal_to_the_sweep_proof():
    """The goal's arrays and slacks are made once per goal, keyed by its values: a goal array changed in place (a
    user moving a task's goal between two searches in one process) gives the new position and axes, not the old."""
    origins, axes = np.zeros((1, 3)), np.array([[0.0, 0.0, 1.0]])
    tcp = np.eye(4)
    tcp[:3, 3] = (0.3, 0.0, 0.2)
    chain = chain_to_tcp(origins, axes, np.zeros(1), tcp)
    goal = np.eye(4)
    goal[:3, 3] = (0.3, 0.0, 0.5)
    first = sweep_proof._target(chain, goal, EXP2)
    assert first.pos.tolist() == [0.3, 0.0, 0.5]
    goal[:3, 3] = (-0.4, 0.2, 0.1)
    goal[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    moved = sweep_proof._target(chain, goal, EXP2)
    assert moved.pos.tolist() == [-0.4, 0.2, 0.1] and first.pos.tolist() == [0.3, 0.0, 0.5]
    assert np.array_equal(moved.axes, goal[:3, :3].T) and not np.array_equal(first.axes, moved.axes)


@settings(max_examples=30, deadline=None)
@given(**ROBOTS, margin=st.sampled_from([0.0, 0.02]), near=st.sampled_from([0.0, 0.05]))
def test_a_witness_checked_once_ends_what_the_certificate_ends(name, pick, seed, spread, margin, near):
    """A goal at the TCP of a configuration (``near``: its neighbour's), obstacle boxes around that configuration
    and another, the configuration as the family's witness: where ``witness_ends`` (``sweep_proof._swept``'s check,
    once per chain) says it ends the certificate, the certificate with the witness is undecided; elsewhere it is the
    certificate without the witness (the same verdict and boxes), from the whole turn and from that proof's boxes."""
    rng = np.random.default_rng(seed)
    robot = assembly_of(name, pick, rng, spread)[0].robot
    sweep = sweep_proof.arm_sweep(robot)
    if sweep is None:
        return
    use_compiled(True)
    q = anywhere_configuration(robot, rng)
    obstacles = sweep_proof.obstacle_boxes(obstacle_task(boxes_around(robot, q, rng, 2) + boxes_around(
        robot, anywhere_configuration(robot, rng), rng, 1)))  # fmt: skip
    witness = chain_angles(sweep, q)
    goal = robot.fk(np.asarray(q, dtype=float) + rng.uniform(-near, near, len(q)))
    ended = sweep_proof.witness_ends(sweep, obstacles, witness, margin)
    options = {"margin": margin, "budget": 2048, "leaves": True}
    alone = sweep_proof.sweep_certificate(sweep, obstacles, goal, EXP2, **options)
    starts = [None] if alone is None or alone.leaves is None else [None, (alone.leaves, 0.02)]
    for start in starts:
        got = sweep_proof.sweep_certificate(sweep, obstacles, goal, EXP2, witness=witness, start=start, **options)
        want = None if ended else sweep_proof.sweep_certificate(sweep, obstacles, goal, EXP2, start=start, **options)
        assert (got is None) == (want is None), (ended, start is None)
        assert got is None or (got.boxes, got.link) == (want.boxes, want.link)
