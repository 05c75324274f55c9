"""The SRDF's collision matrix agrees with timor's own self-collision check (issue 34): MoveIt, which checks every
link pair the SRDF leaves enabled, finds a self-collision exactly where timor finds one. Checked over random
configurations the SRDF's sampling never saw (another seed), on robots of three module sets (IMPROV where
../shared is there), with hypothesis choosing the seeds.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly
from timor_core.export.formats.srdf import NEVER_CLEARANCE, assembly_to_srdf

ROBCO_3 = ("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper")
ROBCO_6 = ("base", "J", "L_100", "J", "L_250", "J", "L_250", "J", "L_100", "J", "L_100", "J", "gripper")
PRIMITIVES_6 = ("base", "J2", "i_45", "J2", "J2", "l_30", "J1", "J2", "J1", "eef")
IMPROV_6 = ("1", "21", "4", "21", "5", "23", "12")


def _link_of(robot) -> dict[str, str]:
    """Collision geometry name -> the URDF link it belongs to."""
    gm = robot.collision
    return {o.name: robot.model.frames[o.parentFrame].name for o in gm.geometryObjects}


def _enabled(assembly, n_samples: int = 1000, seed: int = 0) -> set[frozenset]:
    robot = assembly.robot
    links = set(_link_of(robot).values())
    srdf = ET.fromstring(assembly_to_srdf(assembly, n_samples=n_samples, seed=seed))
    disabled = {frozenset((d.get("link1"), d.get("link2"))) for d in srdf.iter("disable_collisions")}
    return {frozenset((a, b)) for a in links for b in links if a < b} - disabled


def _agree(assembly, enabled: set[frozenset], seed: int, n: int) -> None:
    robot = assembly.robot
    link_of = _link_of(robot)
    checked = {frozenset((link_of[a], link_of[b])) for a, b in robot.collision_pairs}
    assert enabled <= checked, f"MoveIt would check pairs timor ignores: {sorted(map(sorted, enabled - checked))}"
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = robot.random_configuration(rng=rng)
        timor = {frozenset((link_of[a], link_of[b])) for a, b in robot.self_collisions(q)}
        assert timor <= enabled, f"at q={q.tolist()} MoveIt misses {sorted(map(sorted, timor - enabled))}"


@pytest.fixture(scope="module")
def robots(robco, primitives):
    return {
        "robco_3": ModuleAssembly.from_serial_modules(robco, ROBCO_3),
        "robco_6": ModuleAssembly.from_serial_modules(robco, ROBCO_6),
        "primitives_6": ModuleAssembly.from_serial_modules(primitives, PRIMITIVES_6),
    }


@pytest.fixture(scope="module")
def matrices(robots):
    return {name: _enabled(a) for name, a in robots.items()}


@pytest.mark.parametrize("name", ["robco_3", "robco_6", "primitives_6"])
def test_moveit_and_timor_find_the_same_self_collisions(robots, matrices, name):
    _agree(robots[name], matrices[name], seed=12345, n=1500)


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1))
def test_agreement_holds_for_any_seed(robots, matrices, seed):
    _agree(robots["robco_6"], matrices["robco_6"], seed=seed, n=300)


def test_improv_agrees(improv):
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_6)
    _agree(assembly, _enabled(assembly), seed=99, n=800)


def test_home_collisions_timor_reports_stay_checked(robco):
    """A robot folded onto itself at home: timor reports that collision, so the SRDF does not call the pair
    'Default' (the Setup Assistant's rule would, and MoveIt would then plan through it)."""
    assembly = ModuleAssembly.from_serial_modules(robco, ROBCO_6)
    robot = assembly.robot
    at_home = robot.self_collisions(np.zeros(robot.dof))
    assert at_home
    link_of = _link_of(robot)
    enabled = _enabled(assembly, n_samples=200)
    assert {frozenset((link_of[a], link_of[b])) for a, b in at_home} <= enabled
    assert NEVER_CLEARANCE > 0


def test_a_robot_without_collision_geometry_gets_an_srdf(tmp_path):
    """An import whose meshes were left out (`--meshes skip`) has no collision geometry: nothing to disable (the
    matrix crashed on its empty candidate list before)."""
    import subprocess
    import sys
    from pathlib import Path

    from timor_core import ModulesDB

    urdf = Path(__file__).parent / "data" / "urdf_names" / "ur5_names.urdf"
    out = tmp_path / "modules.json"
    cli = [sys.executable, "-m", "timor_core.cli", "import", str(urdf), "-o", str(out), "--keep-names",
           "--meshes", "skip"]  # fmt: skip
    done = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(out), ["ur5"])
    srdf = ET.fromstring(assembly_to_srdf(assembly, n_samples=20))
    assert srdf.find("group/chain").get("tip_link") == "tool0" and not srdf.findall("disable_collisions")
