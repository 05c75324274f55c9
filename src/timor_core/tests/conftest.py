"""Shared fixtures: the embedded module sets and, when present, the real CoBRA data in ../shared."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

# every process of the suite (Dask workers, CLI and node subprocesses too) runs the interpreted kernels, so results
# compared across processes are the same to the last digit; the compiled ones are tested in-process where named
# (timor_core.common.compiled: both agree to rounding)
os.environ["TIMOR_COMPILED"] = "0"

from timor_core import ModulesDB
from timor_core.export.formats.urdfdom import check_urdf, unchecked_urdfs

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
    config.addinivalue_line("markers", "invalid_urdf: the test writes URDF files urdfdom must refuse (not checked)")


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
