"""The compiled descents do less of the same work (``kinematics/ik_jit.py``, issue 38 item 1): a trial step's Jacobian
is made only once the step is taken, J J^T's lower half is its upper half mirrored, and a random start is chosen by
the candidates' poses alone. Each must give the same numbers to the last bit as the eager work it replaces: here the
eager descent (the trial's pose, Jacobian and all of J J^T made at every trial, as before) is written out with numba
and compared with ``descend`` and ``best_start`` on random chains, goals and starts. Its kinematics (the frame's pose
and Jacobian, weighed) are written anew here from the definition, not taken from ``ik_jit``, and checked against
Pinocchio's: a fault in ``ik_jit``'s pose or Jacobian makes the descents differ. (The goal's residual, the damped
step and the limits' guard, which the laziness does not touch, are ``ik_jit``'s; ``test_ik_kernel.py`` checks those
against the interpreted descent and Pinocchio.)"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest

pytest.importorskip("numba")
pin = pytest.importorskip("pinocchio")

from timor_core.kinematics import ik_jit  # noqa: E402 (after the skip: it imports numba)
from timor_core.kinematics.ik_descent import CONVERGED  # noqa: E402

_jit = numba.njit(cache=False)


@_jit
def _eager_gram(J, JJt):
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(J.shape[1]):
                s += J[a, k] * J[b, k]
            JJt[a, b] = s


@_jit
def _rotation_about(kind, axis, angle):
    """A revolute joint's rotation by ``angle`` about the frame's axis ``kind`` (0-2: x, y, z; the entries c and
    +-s, the rest 0 and 1) or about the unit ``axis`` (kind 3: Rodrigues' formula)."""
    c, s = math.cos(angle), math.sin(angle)
    M = np.zeros((3, 3))
    if kind < 3:
        j, k = (kind + 1) % 3, (kind + 2) % 3
        M[kind, kind], M[j, j], M[j, k], M[k, j], M[k, k] = 1.0, c, -s, s, c
        return M
    x, y, z = axis[0], axis[1], axis[2]
    t = 1.0 - c
    M[0, 0], M[0, 1], M[0, 2] = c + t * x * x, t * x * y - s * z, t * x * z + s * y
    M[1, 0], M[1, 1], M[1, 2] = t * x * y + s * z, c + t * y * y, t * y * z - s * x
    M[2, 0], M[2, 1], M[2, 2] = t * x * z - s * y, t * y * z + s * x, c + t * z * z
    return M


@_jit
def _product(A, B):
    """A B (3, 3), each entry the sum of its three products left to right."""
    out = np.empty((3, 3))
    for r in range(3):
        for col in range(3):
            out[r, col] = A[r, 0] * B[0, col] + A[r, 1] * B[1, col] + A[r, 2] * B[2, col]
    return out


@_jit
def _apply(R, p, v):
    """p + R v (3,), each entry summed left to right."""
    return np.array([p[r] + R[r, 0] * v[0] + R[r, 1] * v[1] + R[r, 2] * v[2] for r in range(3)])


@_jit
def _turn(R, v):
    """R v (3,), each entry summed left to right."""
    return np.array([R[r, 0] * v[0] + R[r, 1] * v[1] + R[r, 2] * v[2] for r in range(3)])


@_jit
def _pose_and_jacobian(placements, kinds, axes, tool, moving, q, T, J):
    """The frame's pose ``T`` and Jacobian ``J`` (world axes at the frame's origin: each moving joint's column the
    axis w and w x (p - o), o the joint's origin, p the frame's) of the chain, from the definition: T = P_1 Rot_1(q_1)
    ... P_m Rot_m(q_m) tool."""
    R, p = np.eye(3), np.zeros(3)
    origins, directions = np.zeros((moving, 3)), np.zeros((moving, 3))
    for k in range(moving):
        P = placements[k]
        p = _apply(R, p, P[:3, 3])
        A = _product(R, P[:3, :3])
        directions[k] = _turn(A, axes[k] if kinds[k] == 3 else np.eye(3)[kinds[k]])
        origins[k] = p
        R = _product(A, _rotation_about(kinds[k], axes[k], q[k]))
    T[:3, 3] = _apply(R, p, tool[:3, 3])
    T[:3, :3] = _product(R, tool[:3, :3])
    T[3, :3], T[3, 3] = 0.0, 1.0
    J[:, :] = 0.0
    for k in range(moving):
        w, d = directions[k], T[:3, 3] - origins[k]
        J[0, k], J[1, k], J[2, k] = w[1] * d[2] - w[2] * d[1], w[2] * d[0] - w[0] * d[2], w[0] * d[1] - w[1] * d[0]
        J[3, k], J[4, k], J[5, k] = w[0], w[1], w[2]


@_jit
def _eager_linearize(chain, q, params, frozen, T, r, J, JJt, work, rot_work):
    """At ``q``: pose, residual, Jacobian with the residual's zero rows and the frozen columns zero and the angle rows
    weighted, J J^T in full; the squared residual."""
    _pose_and_jacobian(chain[0], chain[1], chain[2], chain[3], chain[4], q, T, J)
    cost, bits = ik_jit.terms(T, params, r, rot_work)
    for a in range(6):
        weight = (1.0 if a < 3 else params[25]) if (bits >> a) & 1 else 0.0
        for k in range(J.shape[1]):
            J[a, k] = 0.0 if frozen[k] else J[a, k] * weight
    _eager_gram(J, JJt)
    return cost


@_jit
def _trial(q, step, lo, hi, max_step):
    """The trial point of a step (bounded, clipped to the limits) and whether the limits clipped it."""
    big = np.abs(step).max() if len(step) else 0.0
    new = q - step * (max_step / big) if big > max_step else q - step
    trial = np.minimum(np.maximum(new, lo), hi)
    return trial, bool((trial != new).any())


@_jit
def _eager_descend(chain, lo, hi, crossable, frozen, q0, params, settings, q_out, T_out):
    """``ik_jit.descend`` as it was before (issue 38 item 1), written anew: every trial linearized in full."""
    n = q0.shape[0]
    lam, patience, converged = settings[1], int(settings[5]), settings[7]
    wraps = int(settings[6]) if crossable.any() else 0
    work, rot_work, step = np.empty((n, 2, 3)), np.empty((3, 3)), np.empty(n)
    here = (q0.copy(), np.empty((4, 4)), np.empty(6), np.empty((6, n)), np.empty((6, 6)))
    cost = _eager_linearize(chain, here[0], params, frozen, here[1], here[2], here[3], here[4], work, rot_work)
    at_limit, ref, since, iterations, blocked, cut = ik_jit._at_limit(here[0], lo, hi), cost, 0, 0, 0, False
    while iterations < int(settings[0]):
        iterations += 1
        since += 1
        if cost <= converged or (since == int(settings[3]) and cost > settings[4] * ref):
            break
        if since == int(settings[3]):
            ref, since = cost, 0
        ik_jit._solve_step(here[3], here[4], lam, here[2], step)
        action = 0
        if at_limit:
            action, blocked, wraps = ik_jit._guard(here[0], step, here[3], lam, here[2], lo, hi, crossable, wraps,
                                                   blocked, patience)  # fmt: skip
        if action == 2:
            cut = True
            break
        if action == 1:
            cost = _eager_linearize(chain, here[0], params, frozen, here[1], here[2], here[3], here[4], work, rot_work)
            lam, ref, since = settings[1], cost, 0
            continue
        q_trial, clipped = _trial(here[0], step, lo, hi, settings[2])
        there = (q_trial, np.empty((4, 4)), np.empty(6), np.empty((6, n)), np.empty((6, 6)))
        cost_new = _eager_linearize(chain, q_trial, params, frozen, there[1], there[2], there[3], there[4], work,
                                    rot_work)  # fmt: skip
        if cost_new >= cost:
            lam *= 10.0
            if lam > 1e3:
                break
            continue
        here, cost = there, cost_new
        at_limit = clipped or (at_limit and ik_jit._at_limit(here[0], lo, hi))
        blocked = blocked if at_limit else 0
        lam = max(lam * 0.3, 1e-9)
    q_out[:] = here[0]
    T_out[:, :] = here[1]
    return cost, iterations, cut


@_jit
def _eager_best_start(chain, candidates, params):
    n = candidates.shape[1]
    T, r, J, rot_work = np.empty((4, 4)), np.empty(6), np.empty((6, n)), np.empty((3, 3))
    best, best_cost = 0, math.inf
    for i in range(candidates.shape[0]):
        _pose_and_jacobian(chain[0], chain[1], chain[2], chain[3], chain[4], candidates[i], T, J)
        cost = ik_jit.terms(T, params, r, rot_work)[0]
        if cost < best_cost:
            best, best_cost = i, cost
    return best


def _rotation(rng: np.random.Generator) -> np.ndarray:
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    return q * np.sign(np.linalg.det(q))


def _chain(rng: np.random.Generator, n: int) -> tuple:
    """A random serial chain of ``n`` revolute joints (x/y/z or skew axes), its TCP after the last or an earlier one."""
    placements = np.zeros((n, 4, 4))
    for k in range(n):
        placements[k, :3, :3] = _rotation(rng) if rng.random() < 0.5 else np.eye(3)
        placements[k, :3, 3] = rng.uniform(-0.4, 0.4, 3)
        placements[k, 3, 3] = 1.0
    kinds = rng.integers(0, 4, n).astype(np.int64)
    axes = np.eye(3)[np.minimum(kinds, 2)].copy()
    skew = kinds == 3
    axes[skew] = rng.normal(size=(int(skew.sum()), 3))
    axes[skew] /= np.linalg.norm(axes[skew], axis=1)[:, None]
    tool = np.eye(4)
    tool[:3, :3], tool[:3, 3] = _rotation(rng), rng.uniform(-0.2, 0.2, 3)
    moving = int(n if rng.random() < 0.8 else rng.integers(1, n + 1))
    return placements, kinds, np.ascontiguousarray(axes), tool, moving


def _params(rng: np.random.Generator, box: bool) -> np.ndarray:
    """A goal as ``Projector.lm_params`` gives it: a sphere/cone or a box/cone goal, its rotation checked or not."""
    p = np.zeros(26)
    p[0:3] = rng.uniform(-1.0, 1.0, 3)
    p[3:12] = _rotation(rng).reshape(9)
    p[12:15], p[15:18] = -rng.uniform(0, 0.01, 3), rng.uniform(0, 0.01, 3)
    p[18:20] = 0.0, rng.choice([0.0, 0.001, 0.05])
    p[20:22] = 0.0, rng.choice([0.0, math.radians(1.0), math.pi / 4])
    p[22], p[23], p[24], p[25] = float(box), float(rng.random() < 0.5), float(rng.random() < 0.8), 0.3
    return p


def _limits(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Joint limits: some narrow, some nearly a whole turn (a gap to cross), some none (Pinocchio's +-DBL_MAX)."""
    lo, hi = np.empty(n), np.empty(n)
    for k in range(n):
        kind = rng.integers(0, 3)
        half = (rng.uniform(0.3, 1.5), math.pi - rng.uniform(0.01, 0.5), np.finfo(float).max)[kind]
        lo[k], hi[k] = -half, half
    limited = hi < 1e300
    crossable = limited & (2 * math.pi - np.subtract(hi, lo, out=np.zeros(n), where=limited) <= 1.0)
    return lo, hi, crossable


def _pinocchio(chain: tuple) -> tuple:
    """The chain as a Pinocchio model (joints about x, y, z or an axis; the frame on joint ``moving``) and frame."""
    placements, kinds, axes, tool, moving = chain
    model, parent = pin.Model(), 0
    for k, kind in enumerate(kinds):
        joint = (pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)[kind]() if kind < 3 else \
            pin.JointModelRevoluteUnaligned(*axes[k])  # fmt: skip
        parent = model.addJoint(parent, joint, pin.SE3(placements[k]), f"j{k}")
    fid = model.addFrame(pin.Frame("tool", moving, 0, pin.SE3(tool), pin.FrameType.OP_FRAME))
    return model, fid


def test_the_references_pose_and_jacobian_are_pinocchios():
    """The reference's kinematics (written here, not ``ik_jit``'s) against Pinocchio's frame pose and Jacobian in
    world axes at the frame (LOCAL_WORLD_ALIGNED) on random chains and configurations: to rounding."""
    rng = np.random.default_rng(11)
    for _ in range(100):
        n = int(rng.integers(1, 8))
        chain = _chain(rng, n)
        model, fid = _pinocchio(chain)
        data = model.createData()
        q = rng.uniform(-math.pi, math.pi, n)
        q[rng.random(n) < 0.2] = 0.0
        T, J = np.empty((4, 4)), np.empty((6, n))
        _pose_and_jacobian(*chain, q, T, J)
        pin.framesForwardKinematics(model, data, q)
        want_J = np.reshape(pin.computeFrameJacobian(model, data, q, fid, pin.LOCAL_WORLD_ALIGNED), (6, n))
        assert np.allclose(T, data.oMf[fid].homogeneous, rtol=0, atol=1e-12)
        assert np.allclose(J, want_J, rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_lazy_descent_is_the_eager_one_to_the_last_bit(seed):
    """Random chains of 1-7 joints, goals, limits (crossable gaps), frozen joints and starts (some at a limit):
    ``descend`` gives the eager descent's q, pose, squared residual, iterations and cut, bit for bit."""
    rng = np.random.default_rng(seed)
    compared, taken = 0, 0
    for _ in range(60):
        n = int(rng.integers(1, 8))
        chain = _chain(rng, n)
        params = _params(rng, box=bool(rng.random() < 0.5))
        lo, hi, crossable = _limits(rng, n)
        frozen = rng.random(n) < 0.15
        for _ in range(3):
            q0 = np.clip(rng.uniform(-math.pi, math.pi, n), lo, hi)
            q0[rng.random(n) < 0.2] = hi[0] if hi[0] < 1e300 else 0.0
            q0 = np.clip(q0, lo, hi)
            iters = rng.choice([5, 60, 200])
            settings = np.array([iters, 3e-3, rng.choice([0.3, 1.0]), 5, 0.5, 3, 1, CONVERGED])
            got_q, got_T = np.empty(n), np.empty((4, 4))
            want_q, want_T = np.empty(n), np.empty((4, 4))
            args = (chain, lo, hi, crossable, frozen, q0, params, settings)
            got = ik_jit.descend(*args, got_q, got_T)
            want = _eager_descend(*args, want_q, want_T)
            assert got == want
            assert got_q.tobytes() == want_q.tobytes() and got_T.tobytes() == want_T.tobytes()
            compared += 1
            taken += got[1] > 2
    assert compared == 180 and taken > compared // 4  # (descents of several steps among them)


def test_the_mirrored_gram_is_the_full_one_to_the_last_bit():
    rng = np.random.default_rng(3)
    for n in range(1, 9):
        for _ in range(50):
            J = rng.normal(size=(6, n)) * rng.choice([1e-8, 1.0, 1e6], size=(6, n))
            got, want = np.empty((6, 6)), np.empty((6, 6))
            ik_jit._gram(J, got)
            _eager_gram(J, want)
            assert got.tobytes() == want.tobytes()


def test_the_start_chosen_by_poses_alone_is_the_eager_one():
    rng = np.random.default_rng(5)
    for _ in range(200):
        n = int(rng.integers(1, 8))
        chain = _chain(rng, n)
        params = _params(rng, box=bool(rng.random() < 0.5))
        candidates = rng.uniform(-math.pi, math.pi, (int(rng.integers(1, 9)), n))
        assert ik_jit.best_start(chain, candidates, params) == _eager_best_start(chain, candidates, params)
