"""The compiled IK descents (``kinematics/ik_kernel.py``, ``ik_jit.py``) against the interpreted ones and Pinocchio:
the chain's kinematics and Jacobian equal Pinocchio's, log3 equals Pinocchio's, the residual equals the interpreted
closures', and whole IK calls agree (same success; the same q up to near ties) on robots nobody here wrote."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urdf_agreement import robots_share

from timor_core import ModuleAssembly, ModulesDB, PinRobot
from timor_core.common import compiled
from timor_core.kinematics import ik_kernel
from timor_core.kinematics.ik_descent import LWA
from timor_core.kinematics.ik_residual import projector
from timor_core.kinematics.tolerance import tolerance_from_json

TOLERANCES = {
    "box_cone": (["x", "y", "z", "Theta_R"], [[-0.001, 0.001]] * 3 + [[0.0, 0.7853981633974483]]),
    "sphere_cone": (["r_sph", "Theta_R"], [[0.0, 0.001], [0.0, 0.02]]),
    "sphere": (["r_sph"], [[0.0, 0.002]]),
    "box_sphere": (["x", "y", "z", "r_sph"], [[-0.01, 0.01], [-0.002, 0.002], [-1.0, 1.0], [0.0, 0.005]]),
    "ring": (["r_sph", "Theta_R"], [[0.01, 0.02], [0.1, 0.3]]),
}


@pytest.fixture(autouse=True)
def _rule_after():
    yield
    compiled.use_compiled(None)


def _unaligned_chain(seed: int) -> pin.Model:
    """A serial chain of revolute joints about random axes, with random placements (no Pinocchio sample has it)."""
    rng = np.random.default_rng(seed)
    model, parent = pin.Model(), 0
    for k in range(int(rng.integers(2, 8))):
        axis = rng.normal(size=3)
        placement = pin.SE3(pin.exp3(rng.normal(size=3)), rng.uniform(-0.3, 0.3, 3))
        joint = pin.JointModelRevoluteUnaligned(*(axis / np.linalg.norm(axis)))
        parent = model.addJoint(parent, joint, placement, f"j{k}", np.full(1, 50.0), np.full(1, 5.0),
                                np.full(1, -2.5), np.full(1, 2.5))  # fmt: skip
    model.addFrame(pin.Frame("tool", parent, 0, pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3) * 0.1),
                             pin.FrameType.OP_FRAME))  # fmt: skip
    return model


def _ur5_urdf() -> Path:
    share = robots_share()
    if share is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    urdf = share / "robots" / "ur_description" / "urdf" / "ur5_robot.urdf"
    if not urdf.is_file():
        pytest.skip("example-robot-data holds no ur5_robot.urdf")
    return urdf


def _ur5() -> tuple[pin.Model, int]:
    model = pin.buildModelFromUrdf(str(_ur5_urdf()))
    return model, model.getFrameId("tool0")


def _models() -> list[tuple[str, pin.Model, int]]:
    sample = pin.buildSampleModelManipulator()
    ur5, tool0 = _ur5()
    out = [("sample manipulator", sample, sample.nframes - 1), ("ur5", ur5, tool0)]
    out += [(f"unaligned {s}", m, m.nframes - 1) for s in range(3) for m in [_unaligned_chain(s)]]
    return out


def test_the_chain_kinematics_are_pinocchios():
    """Frame pose and LOCAL_WORLD_ALIGNED Jacobian of the kernel's chain = Pinocchio's, on Pinocchio's sample
    manipulator (x/y/z axes), the UR5 of example-robot-data and chains about unaligned axes."""
    jit = ik_kernel.kernels()
    rng = np.random.default_rng(3)
    for name, model, fid in _models():
        chain = ik_kernel.kernel_chain(model, fid)
        assert chain is not None, name
        data, n = model.createData(), model.nv
        T, J, work = np.empty((4, 4)), np.empty((6, n)), np.empty((n, 2, 3))
        for _ in range(50):
            q = rng.uniform(-math.pi, math.pi, n)
            jit.forward(chain.placements, chain.kinds, chain.axes, chain.tool, chain.moving, q, T, J, work)
            want_J = pin.computeFrameJacobian(model, data, q, fid, LWA)
            np.testing.assert_allclose(T, data.oMf[fid].homogeneous, rtol=0, atol=1e-12, err_msg=name)
            np.testing.assert_allclose(J, want_J, rtol=0, atol=1e-12, err_msg=name)


def _chain_pose_of_numpy_scalars(chain: ik_kernel.KernelChain, q: np.ndarray) -> np.ndarray:
    """``chain_pose`` as it was before s54-sweep (numpy scalars and an identity's block set from lists)."""
    T = np.eye(4)
    for k in range(chain.moving):
        x, y, z = chain.axes[k]
        c, s = math.cos(q[k]), math.sin(q[k])
        t = 1.0 - c
        M = np.eye(4)
        M[:3, :3] = [[c + t * x * x, t * x * y - s * z, t * x * z + s * y],
                     [t * x * y + s * z, c + t * y * y, t * y * z - s * x],
                     [t * x * z - s * y, t * y * z + s * x, c + t * z * z]]  # fmt: skip
        T = T @ chain.placements[k] @ M
    return T @ chain.tool


def test_chain_pose_from_python_floats_is_the_numpy_scalars_pose_bit_for_bit():
    """``chain_pose`` (the failed IK's miss) from Python floats gives the pose of numpy's scalars to the last bit, for
    random chains about unaligned and x/y/z axes, angles as float64, float32 or a list, with joints after the frame
    (review of s54-sweep)."""
    rng = np.random.default_rng(38)
    for k in range(2000):
        n = int(rng.integers(1, 8))
        placements = np.tile(np.eye(4), (n, 1, 1))
        placements[:, :3, :3], placements[:, :3, 3] = (
            np.linalg.qr(rng.normal(size=(n, 3, 3)))[0],
            rng.normal(size=(n, 3)),
        )
        axes = rng.normal(size=(n, 3)) if k % 3 else np.eye(3)[rng.integers(0, 3, n)]
        axes /= np.linalg.norm(axes, axis=1)[:, None]
        tool = np.eye(4)
        tool[:3, 3] = rng.normal(size=3)
        chain = ik_kernel.KernelChain(placements, np.full(n, 3), axes, tool, int(rng.integers(1, n + 1)))
        q = rng.uniform(-7.0, 7.0, n)
        for angles in (q, q.astype(np.float32), list(q)):
            got, want = ik_kernel.chain_pose(chain, angles), _chain_pose_of_numpy_scalars(chain, angles)
            assert got.tobytes() == want.tobytes(), (k, angles)


def test_a_tree_or_a_prismatic_joint_is_left_to_the_interpreted_descent():
    model = pin.buildSampleModelHumanoid()  # a tree with a free flyer
    assert ik_kernel.kernel_chain(model, model.nframes - 1) is None
    prismatic = pin.Model()
    j = prismatic.addJoint(0, pin.JointModelPZ(), pin.SE3.Identity(), "slide")
    prismatic.addFrame(pin.Frame("tool", j, 0, pin.SE3.Identity(), pin.FrameType.OP_FRAME))
    assert ik_kernel.kernel_chain(prismatic, prismatic.nframes - 1) is None


@settings(max_examples=300, deadline=None)
@given(
    axis=st.lists(st.floats(-1, 1), min_size=3, max_size=3).filter(lambda v: 1e-3 < np.linalg.norm(v)),
    angle=st.one_of(st.floats(0, math.pi), st.floats(math.pi - 1e-5, math.pi), st.floats(0, 1e-5)),
)
def test_log3_is_pinocchios(axis, angle):
    jit = ik_kernel.kernels()
    R = pin.exp3(np.asarray(axis) / np.linalg.norm(axis) * angle)
    out = np.empty(3)
    jit.log3(R, out)
    # near pi, 1 / sin(angle) amplifies the rounding of the rotation's entries (angle pi - 0.007: ~7e-12 apart)
    np.testing.assert_allclose(out, pin.log3(R), rtol=0, atol=1e-9)


@pytest.mark.parametrize("kind", sorted(TOLERANCES))
def test_the_residual_is_the_interpreted_one(kind):
    """Residual, its squared norm and which components are non-zero (the Jacobian rows kept) = ``lm_terms``'s."""
    jit = ik_kernel.kernels()
    project = projector(tolerance_from_json(*TOLERANCES[kind]), 1e-7)
    rng = np.random.default_rng(5)
    r, rot = np.empty(6), np.empty((3, 3))
    for _ in range(300):
        desired = np.eye(4)
        desired[:3, :3], desired[:3, 3] = pin.exp3(rng.normal(size=3)), rng.normal(size=3) * 0.3
        terms, params = project.lm_terms(desired), project.lm_params(desired)
        real = pin.SE3(pin.exp3(rng.normal(size=3) * rng.choice([1e-3, 0.3, 3.0])), desired[:3, 3] +
                       rng.normal(size=3) * rng.choice([1e-4, 1e-3, 0.1]))  # fmt: skip
        want, want_cost, rows = terms(real)
        cost, bits = jit.terms(real.homogeneous, params, r, rot)
        np.testing.assert_allclose(r, want, rtol=0, atol=1e-12)
        assert cost == pytest.approx(want_cost, rel=1e-12, abs=1e-15)
        assert [(bits >> k) & 1 == 1 for k in range(6)] == (rows[:, 0] != 0).tolist()


def _robots() -> list[tuple[str, PinRobot]]:
    db = ModulesDB.from_name("robco_like")
    ids = [
        ["base", "J", "L_100", "J", "L_150", "J", "L_100", "J", "L_100", "J", "gripper"],
        ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"],
    ]
    out = [(" ".join(i), ModuleAssembly.from_serial_modules(db, i).robot) for i in ids]
    urdf = _ur5_urdf()  # .../share/example-robot-data/robots/ur_description/urdf/
    out.append(("ur5", PinRobot.from_urdf(urdf, urdf.parents[4])))
    return out


@pytest.mark.parametrize("kind", ["box_cone", "sphere_cone"])
def test_compiled_and_interpreted_ik_agree(kind):
    """Whole IK calls (random starts, tries, the limit guard) from the same seeds: the same success on every goal
    (reachable ones: FK of random q; others moved off by up to ~0.5 m), every compiled solution within the
    tolerance, and the same q except where a near tie sent a descent elsewhere (rounding: few)."""
    tolerance = tolerance_from_json(*TOLERANCES[kind])
    rng = np.random.default_rng(11)
    calls = same_q = 0
    for name, robot in _robots():
        for i in range(30):
            goal = robot.fk(robot.random_configuration(rng)).copy()
            if i % 3 == 2:
                goal[:3, 3] += rng.normal(size=3) * 0.2
            results = []
            for mode in (False, True):
                compiled.use_compiled(mode)
                results.append(robot.ik(goal, tolerance=tolerance, rng=i, ignore_self_collision=True, details=True))
            slow, fast = results
            assert slow.success == fast.success, (name, i)
            if fast.success:
                assert tolerance.valid(goal, robot.fk(fast.q)), (name, i)
            calls += 1
            same_q += bool(np.allclose(slow.q, fast.q, rtol=0, atol=1e-6))
    assert same_q >= 0.85 * calls, f"{same_q} of {calls} calls returned the same q"


def test_without_numba_the_interpreted_descent_goes_on():
    code = textwrap.dedent(
        """
        import logging, sys
        sys.modules["numba"] = None  # import numba raises ImportError
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
        import numpy as np
        from timor_core import ModuleAssembly, ModulesDB
        from timor_core.common import compiled
        from timor_core.kinematics import ik_kernel
        ik_kernel.AHEAD_FOLDER = ik_kernel.AHEAD_FOLDER / "none"  # no kernels built ahead of time either
        compiled.LOAD_AFTER = 0.0
        robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"),
                                                   ["base", "J", "L_250", "J", "L_150", "J", "gripper"]).robot
        goal = robot.fk(np.array([0.3, -0.5, 0.8]))
        print("solved", all(robot.ik(goal, rng=k)[1] for k in range(3)))
        compiled.use_compiled(True)
        try:
            robot.ik(goal, rng=0)
        except ImportError:
            print("forced: ImportError")
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TIMOR_COMPILED"}  # the rule, not the suite's choice
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("numba is not available") == 1, out.stdout
    assert "solved True" in out.stdout and "forced: ImportError" in out.stdout, out.stdout


def test_a_search_with_compiled_kernels_finds_what_the_interpreted_one_finds():
    """The constrained search on a task with an obstacle (its task-aware IK fails on arms the pillar blocks), once
    with the interpreted kernels and once with the compiled ones: the same optimum, evaluations and verdicts."""
    from timor_core.search import ExhaustiveSearch
    from timor_core.search.spaces.space import SerialSpace, SpaceOptions
    from timor_core.task import Task

    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_file(Path(__file__).parent / "data" / "exp2_tasks" / "obstacle_middle.json")
    options = SpaceOptions(dof_min=3, dof_max=5, first_is_joint=True, modules=("J", "L_100", "L_150", "L_250"),
                           max_links_between_joints=1, max_links_after_last_joint=1)  # fmt: skip
    results = []
    for mode in (False, True):
        compiled.use_compiled(mode)
        search = ExhaustiveSearch(SerialSpace(db, options), workers=1, order="cost", progress=False)
        results.append(search.optimize(task, db))
    slow, fast = results
    assert slow.found and slow.funnel.failed("ik_task") > 0  # the obstacle refused arms after their kinematic IK
    assert (fast.best_ids, fast.best_cost, fast.evaluations) == (slow.best_ids, slow.best_cost, slow.evaluations)
    counts = [[{k: v for k, v in row.items() if k != "time"} for row in r.funnel.rows()] for r in (slow, fast)]
    assert counts[0] == counts[1]
    assert {g: r.success for g, r in fast.best_goals.items()} == {g: r.success for g, r in slow.best_goals.items()}
