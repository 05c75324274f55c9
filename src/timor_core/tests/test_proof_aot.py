"""The reach proofs' kernels built ahead of time (``search/filtering/proof_aot.py``, ``proof_kernel.ahead``): the
same bounds, flags and children as numba's kernels to the last digit, run from a process's first proof without
numba wherever compiled kernels are allowed, never where ``TIMOR_COMPILED=0``; a build that does not load (broken,
or made for other sources or another numpy) is not used, older builds are removed, and the proofs go on as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import ahead_builds
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from timor_core.common import compiled
from timor_core.search.filtering import proof_kernel as pk
from timor_core.search.filtering.proof_numpy import BoxGoal, halve_boxes_numpy, measure_boxes_numpy

_defaults_after, built, present, _use = ahead_builds.fixtures(pk, "timor_core.search.filtering.proof_aot")
# one worker runs this file: the module's build (``built``, ~10 CPU-s, where ``make test`` has not made it) is made
# once, not by each xdist worker
pytestmark = pytest.mark.xdist_group("ahead_proof")


def _case(rng: np.random.Generator, n: int, m: int) -> tuple:
    """A random chain of n joints, m boxes and a goal (any orientation slack, a wrist cap or none)."""
    rots = Rotation.random(n + 1, random_state=rng.integers(2**31)).as_matrix()
    steps = (np.ascontiguousarray(rots), rng.normal(size=(n + 1, 3)) * 0.2)
    centres, half = rng.uniform(-np.pi, np.pi, (m, n)), rng.uniform(0, rng.choice([0.01, 0.3, np.pi]), (m, n))
    theta = float(rng.choice([0.0, 0.05, 0.5, np.pi]))
    direction = rng.normal(size=3)
    goal = BoxGoal(rng.normal(size=3) * 0.3, Rotation.random(random_state=rng.integers(2**31)).as_matrix(),
                   float(rng.choice([0.001, 0.05, np.inf])), theta, direction / np.linalg.norm(direction),
                   float(rng.choice([0.0, 0.1])), (float(rng.uniform(0, 0.3)), float(rng.uniform(0, 1))),
                   float(rng.uniform(0, 0.2)))  # fmt: skip
    return steps, centres, half, goal


def _run(case: tuple, times: int) -> list:
    steps, centres, half, goal = case
    excess, found, weights = pk.measure_boxes(steps, centres, half, goal)
    return [excess, found, weights, *pk.halve_boxes(centres, half, weights, times)]


@pytest.mark.slow
def test_ahead_built_and_numba_kernels_give_the_same_bounds_and_children(present, tmp_path):
    """measure_boxes and halve_boxes (all four kernels) on random chains of 1-6 joints, boxes and goals: the same
    excess, flag, weights, children and half-widths to the last digit, whether the ahead-built kernels or numba's
    run."""
    rng = np.random.default_rng(7)
    compiled.use_compiled(True)
    flags, refused = set(), 0
    for k in range(60):
        case = _case(rng, 1 + k % 6, int(rng.integers(1, 80)))
        times = int(rng.integers(1, 4))
        _use(present)
        assert pk.ahead() is not None
        ahead = _run(case, times)
        _use(tmp_path)  # nothing built there: numba's kernels
        assert pk.ahead() is None
        jit = _run(case, times)
        assert ahead[1] == jit[1], k
        for a, b in zip(ahead[:1] + ahead[2:], jit[:1] + jit[2:], strict=True):
            np.testing.assert_array_equal(a, b)
        flags.add(ahead[1])
        refused += int(np.isinf(ahead[0]).sum())
    assert flags == {True, False} and refused > 0, "too easy to tell"


@pytest.mark.slow
def test_a_process_runs_the_ahead_built_kernels_from_its_first_proof_without_numba(present):
    """numba hidden (``import numba`` fails) and the rule set to load it at once: with a build, the first proof
    already runs it (no warning, numba never imported), the numbers those of this process's numba kernels; with
    ``TIMOR_COMPILED=0`` the build is never looked at and the numpy bounds run."""
    code = textwrap.dedent(
        f"""
        import json, logging, sys
        sys.modules["numba"] = None  # import numba raises ImportError
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
        from pathlib import Path
        import numpy as np
        from timor_core.common import compiled
        from timor_core.search.filtering import proof_kernel as pk
        from timor_core.search.filtering.proof_numpy import BoxGoal, measure_boxes_numpy
        compiled.LOAD_AFTER = 0.0
        pk.AHEAD_FOLDER = Path({str(present)!r})
        looked, real = [], pk.ahead
        pk.ahead = lambda: looked.append(1) or real()
        steps = (np.tile(np.eye(3), (3, 1, 1)), np.array([[0, 0, 0.1], [0.3, 0, 0], [0.2, 0, 0]]))
        goal = BoxGoal(np.array([0.4, 0.1, 0.3]), np.eye(3), 0.01, 0.1, np.array([1.0, 0, 0]), 0.2, (0.005, 0.05), 0.01)
        centres, half = np.array([[0.1, 0.2], [1.0, -2.0], [2.9, 0.3]]), np.full((3, 2), 0.3)
        got = pk.measure_boxes(steps, centres, half, goal)
        want = measure_boxes_numpy(steps, centres, half, goal)
        print("numpy", all(np.array_equal(a, b) for a, b in zip(got, want)))
        print("looked", bool(looked), "numba", "numba" in sys.modules and sys.modules["numba"] is not None)
        print("out", json.dumps([got[0].tolist(), got[1], got[2].tolist()]))
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TIMOR_COMPILED"}  # the default, not the suite's choice
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "looked True numba False" in out.stdout, out.stdout
    assert "numba is not available" not in out.stdout and "do not load" not in out.stdout, out.stdout
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env=dict(env, TIMOR_COMPILED="0"))  # fmt: skip
    assert off.returncode == 0, off.stderr
    assert "numpy True" in off.stdout and "looked False numba False" in off.stdout, off.stdout
    _use(Path(present).parent / "nothing here")
    compiled.use_compiled(True)  # numba's kernels in this process
    steps = (np.tile(np.eye(3), (3, 1, 1)), np.array([[0, 0, 0.1], [0.3, 0, 0], [0.2, 0, 0]]))
    goal = BoxGoal(np.array([0.4, 0.1, 0.3]), np.eye(3), 0.01, 0.1, np.array([1.0, 0, 0]), 0.2, (0.005, 0.05), 0.01)
    centres, half = np.array([[0.1, 0.2], [1.0, -2.0], [2.9, 0.3]]), np.full((3, 2), 0.3)
    here = pk.measure_boxes(steps, centres, half, goal)
    line = next(s for s in out.stdout.splitlines() if s.startswith("out "))
    assert json.loads(line[4:]) == [here[0].tolist(), here[1], here[2].tolist()]


def test_a_build_that_does_not_load_is_not_used(tmp_path, caplog):
    """A broken file where the build belongs: one warning, no kernels from it, and the proofs' bounds go on (here
    the numpy ones, the same numbers)."""
    _use(tmp_path)
    pk.ahead_path().write_bytes(b"not an extension module")
    assert pk.ahead() is None
    assert caplog.text.count("do not load") == 1
    assert pk.ahead() is None and caplog.text.count("do not load") == 1, "looked for once"
    compiled.use_compiled(False)
    steps = (np.tile(np.eye(3), (3, 1, 1)), np.array([[0, 0, 0.1], [0.3, 0, 0], [0.2, 0, 0]]))
    goal = BoxGoal(np.array([0.4, 0.1, 0.3]), np.eye(3), 0.01, 0.1, np.array([1.0, 0, 0]), 0.2, (0.005, 0.05), 0.01)
    centres, half = np.array([[0.1, 0.2], [1.0, -2.0]]), np.full((2, 2), 0.3)
    got, want = pk.measure_boxes(steps, centres, half, goal), measure_boxes_numpy(steps, centres, half, goal)
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    kids = pk.halve_boxes(centres, half, got[2], 2)
    assert all(np.array_equal(a, b) for a, b in zip(kids, halve_boxes_numpy(centres, half, got[2], 2), strict=True))


def test_a_build_for_other_sources_or_another_numpy_has_another_name(tmp_path, monkeypatch):
    """The build's file name hashes the kernels' sources and numpy's version: a build made before either changed is
    never looked for; the name is stable otherwise, and differs from the IK's."""
    from timor_core.kinematics import ik_kernel

    path = pk.ahead_path(tmp_path)
    assert path == pk.ahead_path(tmp_path) and path.parent == tmp_path and path.name.startswith("proof_aot_")
    assert ik_kernel.ahead_path(tmp_path).name.startswith("ik_aot_")
    monkeypatch.setattr(np, "__version__", "0.0")
    assert pk.ahead_path(tmp_path) != path
    monkeypatch.undo()
    for source in pk.AHEAD_SOURCES:
        text = (Path(pk.__file__).parent / source).read_bytes()
        real = Path.read_bytes
        monkeypatch.setattr(Path, "read_bytes", lambda p, s=source, t=text: t + b"#" if p.name == s else real(p))
        assert pk.ahead_path(tmp_path) != path, source
        monkeypatch.undo()


def test_the_builds_name_hashes_every_file_its_kernels_reach(tmp_path, monkeypatch):
    """Every file of a kernel the builds' exports reach (directly, through numba's compiled helpers or those it inlines
    into their callers: ``box_lanes.py``'s under ``measure_all``) is among the sources the build's name and numba's
    keyed cache names hash (``AHEAD.sources``): an edit there builds another module and compiles the fused kernels
    anew, a stale one is never loaded (a kernel moved to a file this list left out would be: s55-review3)."""
    pytest.importorskip("numba")
    from timor_core.search.filtering import proof_aot

    builds: list[tuple] = []
    monkeypatch.setattr(proof_aot, "build_kernels", lambda ahead, folder, exports, cc, generic=False: builds.append(
        (ahead, exports)) or folder / "built.so")  # fmt: skip
    proof_aot.build(tmp_path)
    reached = {}
    for ahead, exports in builds:  # (the proofs', the look-up's, the staging's: each its own sources)
        kernels = [f if hasattr(f, "py_func") else types.SimpleNamespace(py_func=f) for f, _ in exports.values()]
        reached[ahead.prefix] = set().union(*ahead_builds.kernel_files(kernels).values())
        hashed = {p.name for p in ahead.sources}
        assert reached[ahead.prefix] <= hashed, (ahead.prefix, reached[ahead.prefix] - hashed)
    assert len(reached) == 3, reached
    assert {"box_bounds.py", "box_lanes.py", "proof_fused.py", "sweep_fused.py"} <= reached["proof_aot"]


@pytest.mark.slow
def test_a_build_removes_an_older_one_and_leaves_no_temporary_files(tmp_path):
    """The building side shared by both sets (``common/ahead_build.py``) on a real one-kernel build: the file loads
    with the kernel's results, an older build beside it is removed, no temporary files are left, a second build is a
    no-op (the sets' own builds are compared with numba's kernels above)."""
    ahead_builds.check_build_files(tmp_path)


def test_a_build_compiles_the_fused_proofs_helpers_without_numbas_cache(tmp_path, monkeypatch):
    """numba's on-disk cache checks a function's own file only: the fused proof's helpers (``proof_fused.py``) take
    in the bounds of ``proof_kernel.py``, and a build that took them from the cache after a change there built the
    old bounds into the new module (s49: 329 proofs instead of 339 on ``five_joints`` for unchanged sources). A build
    compiles them anew."""
    from timor_core.search.filtering import proof_aot, proof_fused

    asked: list[bool] = []
    monkeypatch.setattr(proof_fused, "for_build", lambda cache=True: asked.append(cache) or proof_fused.fused_proof)
    monkeypatch.setattr(
        proof_aot, "build_kernels", lambda ahead, folder, exports, cc, generic=False: folder / "built.so"
    )
    assert proof_aot.build(tmp_path) == tmp_path / "built.so"
    assert asked == [False]


def test_without_numbas_ahead_of_time_compiler_the_build_says_so(tmp_path, monkeypatch, capsys):
    """A numba without ``numba.pycc``: the build refuses with a TimorError, the command exits 1 naming the reason,
    nothing is written, and nothing is looked up from it."""
    ahead_builds.check_no_compiler(pk, "timor_core.search.filtering.proof_aot", tmp_path, monkeypatch, capsys)


def test_timor_ahead_0_ignores_the_build(present, monkeypatch):
    """``TIMOR_AHEAD=0`` (what test_dask_budget sets for workers that must compile numba's kernels): the build there
    is not loaded, by the proofs or the IK; unset, it is."""
    from timor_core.kinematics import ik_kernel

    _use(present)
    assert pk.ahead() is not None
    monkeypatch.setenv("TIMOR_AHEAD", "0")
    _use(present)
    assert pk.ahead() is None
    ik_kernel.forget_ahead()
    assert ik_kernel.ahead() is None
    monkeypatch.delenv("TIMOR_AHEAD")
    _use(present)
    assert pk.ahead() is not None
    ik_kernel.forget_ahead()


def _random_chain(rng: np.random.Generator, n: int):
    """A revolute chain of n joints (random origins within ~0.3 m, random axes) and a TCP in any pose."""
    from timor_core.search.filtering.reach_proof import chain_from_frames

    tcp = np.eye(4)
    tcp[:3, :3] = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
    tcp[:3, 3] = rng.normal(size=3) * 0.3
    return chain_from_frames(rng.normal(size=(n, 3)) * 0.3, rng.normal(size=(n, 3)), tcp)


@pytest.mark.slow
def test_the_sweep_bound_built_ahead_gives_numbas_and_numpys_verdicts(present, tmp_path):
    """The sweep proof's bound (``sweep_bound.certain_collision``) on random chains of 1-5 joints with balls on
    their links, random obstacle boxes and boxes of joint angles: the same verdicts whether the kernel built ahead
    of time runs, numba's, or the numpy bound; some boxes called colliding, some not."""
    from timor_core.search.filtering import sweep_bound as sb

    rng = np.random.default_rng(11)
    compiled.use_compiled(True)
    verdicts = set()
    for k in range(40):
        chain = _random_chain(rng, 1 + k % 5)
        p = int(rng.integers(1, 12))
        sweep = sb.ArmSweep(chain, rng.normal(size=(p, 3)) * 0.2, rng.integers(0, chain.dof, p),
                            rng.uniform(0.02, 0.1, p), np.zeros((0, 3)), np.zeros(0), np.arange(chain.dof),
                            np.ones(chain.dof))  # fmt: skip
        b = int(rng.integers(1, 4))
        turns = Rotation.random(b, random_state=int(rng.integers(2**31))).as_matrix().reshape(b, 3, 3)
        obstacles = sb.ObstacleBoxes(rng.normal(size=(b, 3)) * 0.3, turns, rng.uniform(0.05, 0.4, (b, 3)))
        m = int(rng.integers(1, 60))
        centres, half = rng.uniform(-np.pi, np.pi, (m, chain.dof)), rng.uniform(0, 0.3, (m, chain.dof))
        margin = float(rng.choice([0.0, 0.02]))
        _use(present)
        assert pk.ahead_kernel("collisions") is not None
        ahead = sb.certain_collision(sweep, obstacles, centres, half, margin)
        _use(tmp_path)  # nothing built there: numba's kernel
        assert pk.ahead_kernel("collisions") is None
        jit = sb.certain_collision(sweep, obstacles, centres, half, margin)
        np.testing.assert_array_equal(ahead, jit)
        np.testing.assert_array_equal(ahead, sb.certain_collision_numpy(sweep, obstacles, centres, half, margin))
        verdicts.update(ahead.tolist())
    assert verdicts == {True, False}, "too easy to tell"


@pytest.mark.slow
def test_the_witness_descent_built_ahead_gives_numbas_configurations(present, tmp_path):
    """``proof_kernel.reach_witness`` on random chains of 1-6 joints and goals some configuration reaches (or 5 cm
    off one): the same configuration, to the last digit, or none, whether the descent built ahead of time runs or
    numba's; some found, some not."""
    from timor_core.search.filtering.reach_proof import chain_poses

    rng = np.random.default_rng(5)
    compiled.use_compiled(True)
    outcomes = set()
    for k in range(40):
        chain = _random_chain(rng, 1 + k % 6)
        at = chain_poses(chain, rng.uniform(-np.pi, np.pi, (1, chain.dof)))
        pos = at.tcp[0] + (rng.normal(size=3) * 0.05 if k % 3 == 2 else 0.0)
        goal = BoxGoal(pos, at.frames[0], 0.002, float(rng.choice([0.1, 0.8, np.pi])), np.zeros(3), 0.0, (0.0, 0.0),
                       0.0)  # fmt: skip
        centres = rng.uniform(-np.pi, np.pi, (int(rng.integers(1, 40)), chain.dof))
        _use(present)
        ahead = pk.reach_witness(chain.steps, centres, goal)
        _use(tmp_path)  # nothing built there: numba's kernel
        jit = pk.reach_witness(chain.steps, centres, goal)
        assert (ahead is None) == (jit is None), k
        if ahead is not None:
            np.testing.assert_array_equal(ahead, jit)
        outcomes.add(ahead is None)
    assert outcomes == {True, False}, "too easy to tell"
