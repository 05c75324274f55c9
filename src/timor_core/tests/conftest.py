"""Shared fixtures: the embedded module sets and, when present, the real CoBRA data in ../shared."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

# hypothesis runs its entry-point plugins when imported: here only trio's (a dependency of selenium; no test of the
# suite runs trio), which imported trio into every pytest process, ~0.14 CPU-s each (5 runs of a collection each way,
# 2026-11-29, load ~17: 0.66-0.81 against 0.52-0.61 CPU-s)
os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")

from hypothesis import settings

# every process of the suite (Dask workers, CLI and node subprocesses too) runs the compiled kernels (the ahead-of-time
# builds `make test` makes first, else numba's), so results compared across processes are the same to the last digit;
# the interpreted ones are tested in-process where named (use_compiled(False), timor_core.common.compiled: both agree
# to rounding). Compiled rather than interpreted since 2026-11-29: what a user's search runs after its first 0.5 s of
# kernels, and the core suite took 3:02 instead of 3:14 (313 instead of 332 CPU-s, quiet machine, -n 2)
os.environ["TIMOR_COMPILED"] = "1"

from suite_order import LONGEST_FIRST, SLOW, TIMING

from timor_core import ModulesDB
from timor_core.common.compiled import use_compiled
from timor_core.common.interrupts import restore_interrupts
from timor_core.export.formats.urdfdom import check_urdf, unchecked_urdfs

# started as a background job (`make test &`), SIGINT and SIGQUIT would be ignored here and in every process the tests
# start: `timor db show`, the configurator and the other processes the tests stop with SIGINT would wait out their
# timeouts (as the ROS suite's launches did, src/timor_ros/test/conftest.py)
restore_interrupts()

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared"
IMPROV_FILE = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
EMBEDDED = REPO / "src" / "timor_core" / "timor_core" / "data"


# CI runs derandomized (the same examples every run, so a red CI always reproduces); developers get fresh ones
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("TIMOR_HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["TIMOR_HYPOTHESIS_PROFILE"])


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slower tests (deselect with -m 'not slow')")
    config.addinivalue_line("markers", "timing: asserts a wall-clock budget (make test runs these alone, at the end)")
    config.addinivalue_line("markers", "invalid_urdf: the test writes URDF files urdfdom must refuse (not checked)")


def pytest_ignore_collect(collection_path, config):
    """``-m timing`` (make test's run of the timing tests) imports only the modules TIMING names: collecting the
    whole suite to select eleven tests cost that run ~10 s of CPU."""
    if config.getoption("markexpr", "") == "timing" and collection_path.name.startswith("test_"):
        return collection_path.suffix == ".py" and collection_path.name not in TIMING or None
    return None


def _keep_xdist_groups(config, items) -> None:
    """Keep ``--dist loadgroup``'s groups: pytest-xdist 3.8 appends ``@group`` to ``item._nodeid``, which pytest 9.2
    no longer reads (``Node.nodeid`` is ``str(item._id)``), so every xdist_group of the suite was ignored (the
    udp_multicast tests ran side by side, test_packaging's venv was built by each worker). Done here where xdist's
    rewrite cannot take; nothing without --dist loadgroup or on an older pytest (where xdist's rewrite works)."""
    if not getattr(config.option, "loadgroup", False):  # set by xdist for --dist loadgroup only
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2, whose nodes carry a structured id
    except ImportError:
        return
    for item in items:
        names = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in SLOW as slow and those in TIMING as timing; a listed name that its (collected)
    module lacks is an error."""
    modules = {}
    for item in items:
        modules[item.path.name] = item.module
        if {item.originalname, "*"} & SLOW.get(item.path.name, set()):
            item.add_marker(pytest.mark.slow)
        if item.originalname in TIMING.get(item.path.name, set()):
            item.add_marker(pytest.mark.timing)
    listed = {m: SLOW.get(m, set()) | TIMING.get(m, set()) for m in modules}
    stale = {f"{m}::{n}" for m, mod in modules.items() for n in listed[m] - {"*"} if not hasattr(mod, n)}
    if stale:
        raise pytest.UsageError(f"conftest.SLOW or TIMING names tests that are gone: {sorted(stale)}")
    _keep_xdist_groups(config, items)
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep collection order


# -- every URDF file the suite writes must pass urdfdom's check_urdf (robot_state_publisher's and MoveIt's parser)
_CHECKED_URDFS: set[Path] = set()


def check_urdf_file(path: Path) -> None:
    """Fail the test unless urdfdom's ``check_urdf`` parses the file."""
    _CHECKED_URDFS.add(Path(path).resolve())
    ok, output = check_urdf(path)
    if not ok:
        pytest.fail(f"check_urdf refuses {path}:\n{output}", pytrace=False)


def _check_urdfs_under(folder: Path) -> None:
    for path in unchecked_urdfs(folder, _CHECKED_URDFS):
        check_urdf_file(path)


@pytest.fixture(autouse=True)
def _default_kernels():
    """A test that picks the compiled or the interpreted kernels (``use_compiled``) leaves the next test the suite's
    default (``TIMOR_COMPILED=0`` above): a choice left behind made a later in-process search differ in the last bit
    from the same search in other processes (test_dask_search_shards after test_family_proof in one worker)."""
    yield
    use_compiled(None)


@pytest.fixture(autouse=True)
def _written_urdfs_pass_check_urdf(request):
    """After each test, run check_urdf on every ``*.urdf`` it wrote into its tmp_path."""
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is not None and not request.node.get_closest_marker("invalid_urdf"):
        _check_urdfs_under(tmp)


@pytest.fixture(scope="session", autouse=True)
def _session_urdfs_pass_check_urdf(tmp_path_factory):
    """At the end of the session, check_urdf on the URDFs written into shared temporary folders too."""
    yield
    base = tmp_path_factory.getbasetemp()
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("test_")):
        _check_urdfs_under(folder)


@pytest.fixture(scope="session")
def primitives() -> ModulesDB:
    return ModulesDB.from_name("geometric_primitive_modules")


@pytest.fixture(scope="session")
def robco() -> ModulesDB:
    return ModulesDB.from_name("robco_like")


@pytest.fixture(scope="session")
def improv() -> ModulesDB:
    if not IMPROV_FILE.is_file():
        pytest.skip(f"real IMPROV data not available (expected {IMPROV_FILE}); it lives in ../shared beside the repo")
    return ModulesDB.from_json_file(IMPROV_FILE)


def primitives_json() -> dict:
    """A fresh deep copy of the embedded geometric primitive set's JSON, to mutate in tests."""
    return copy.deepcopy(json.loads((EMBEDDED / "geometric_primitive_modules" / "modules.json").read_text()))


def write_db(tmp_path: Path, data: dict, name: str = "modules.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1))
    return path


def random_placement(rng, spread: float):
    """A random base placement for property tests: any rotation, the origin within ``spread`` of the world's."""
    import numpy as np
    from scipy.spatial.transform import Rotation

    m = np.eye(4)
    m[:3, :3] = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
    m[:3, 3] = rng.uniform(-spread, spread, 3)
    return m


def anywhere_configuration(robot, rng):
    """A configuration anywhere in ±2π (beyond the limits too: reach bounds ignore them), prismatic joints within
    their travel."""
    import numpy as np

    q = rng.uniform(-2 * np.pi, 2 * np.pi, robot.dof)
    if robot.dof:
        lo, hi = robot.model.lowerPositionLimit, robot.model.upperPositionLimit
        prismatic = [
            robot.model.joints[j].idx_q
            for j in range(1, robot.model.njoints)
            if "P" in robot.model.joints[j].shortname()
        ]
        q[prismatic] = rng.uniform(lo[prismatic], hi[prismatic])
    return q


def reach_test_spaces() -> tuple[dict, dict]:
    """(module sets, small serial spaces) of both embedded sets, for the reach-bound property tests: 1-5 DOF,
    at most two links between joints and one before the first or after the last joint."""
    from timor_core.search import SerialSpace, SpaceOptions

    dbs = {name: ModulesDB.from_name(name) for name in ("robco_like", "geometric_primitive_modules")}
    options = SpaceOptions(
        dof_min=1,
        dof_max=5,
        first_is_joint=False,
        max_links_between_joints=2,
        max_links_before_first_joint=1,
        max_links_after_last_joint=1,
    )
    return dbs, {name: SerialSpace(db, options) for name, db in dbs.items()}


def same_best(a, b) -> None:
    """Two search results found the same best assembly, cost and position (the Dask tests' equality)."""
    assert a.found and b.found
    assert (a.best_ids, a.best_cost, a.best_seq) == (b.best_ids, b.best_cost, b.best_seq)


def start_forked(evaluator):
    """Start a local Dask cluster (``DaskEvaluator(n_workers=...)``) whose workers are forked from a forkserver that
    has distributed, timor's worker code and the compiled kernels loaded once (``forked_workers(WORKER_PRELOAD)``),
    rather than spawned (each a fresh interpreter importing them): for the module-scoped clusters the Dask tests
    share, which only need *a* cluster. Measured 2026-11-29: a 2-worker cluster's start 2.1 -> 0.9 CPU-s with its
    workers (after the first) with distributed preloaded; timor's worker code and kernels preloaded too saved a
    further ~0.8 CPU-s a worker (each loaded them on its first task). The tests that check a user's cluster
    (its start, the processes it leaves: test_a_local_cluster_leaves_no_process_behind, the CLI's ``--scheduler
    local``) start theirs as a user's starts, spawned, and so does a nanny replacing a killed worker. The forkserver
    stays a child of this process until it exits; it is set up with the module's fixture, before any test takes
    its list of child processes (``before``), so no test counts it as left behind."""
    from timor_core.search.dask_cluster.dask_connect import forked_workers
    from timor_core.search.exhaustive_search.shards import WORKER_PRELOAD

    with forked_workers(WORKER_PRELOAD):
        return evaluator.start()
