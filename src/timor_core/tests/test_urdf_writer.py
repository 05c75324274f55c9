"""The one URDF writer (export/formats/urdf.py): the text of every golden case, the same text from module IDs,
the cache.

The goldens (tests/data/urdf_goldens.json, see urdf_cases.py) pin the bytes of the exp1 sample, random chains of
the embedded sets, trees, chains with odd modules, tool frames, errors, imported robots and xacro files.
Real consumers read the text elsewhere: check_urdf on every URDF a test writes (conftest), Pinocchio's model of
it against the direct builder (test_models_agree.py, test_q_order.py), the URDF import round trip.
"""

from __future__ import annotations

import json
import pickle
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from branched_set import branched_json
from conftest import check_urdf_file, write_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from urdf_cases import GOLDENS, PLACED, cases, digest, outcome, serial_chains

from timor_core.errors import InputError, TimorError
from timor_core.export.formats.urdf import UrdfOptions, assembly_to_urdf, urdf_of_serial
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.paper.experiments import exp1_space

GOLDEN = json.loads(GOLDENS.read_text())


def test_every_golden_case_gives_its_bytes(tmp_path):
    checked, wrong = 0, []
    for case_id, fn, db in cases(tmp_path):
        if case_id not in GOLDEN:  # optional data (IMPROV, example-robot-data) absent when written
            continue
        checked += 1
        if digest(outcome(fn, db)) != GOLDEN[case_id]:
            wrong.append(case_id)
    assert not wrong, f"{len(wrong)} of {checked} cases differ from their golden: {wrong[:10]}"
    assert checked >= 330  # the cases that need no optional data


def _outcome(fn):
    try:
        return fn()
    except TimorError as exc:
        return (type(exc), str(exc))


def test_module_ids_give_the_assemblys_text(primitives, robco):
    """``urdf_of_serial(db, ids)`` (no assembly built) = ``from_serial_modules(db, ids).to_urdf()``."""
    for db in (primitives, robco):
        for k, ids in enumerate(serial_chains(db, 40, seed=11)):
            placement = PLACED if k % 5 == 0 else None
            options = UrdfOptions(prefix="p_" if k % 2 else "", mesh_uri=("file", "package", "relative")[k % 3])
            expected = ModuleAssembly.from_serial_modules(db, ids, placement).to_urdf(None, **asdict(options))
            assert urdf_of_serial(db, ids, None, options, base_placement=placement) == expected
            assert urdf_of_serial(db, ids, "r", prefix=options.prefix, mesh_uri=options.mesh_uri) == assembly_to_urdf(
                ModuleAssembly.from_serial_modules(db, ids), "r", options
            )


def test_no_kinematic_tree_is_built(robco, monkeypatch):
    ids = serial_chains(robco, 1, seed=5)[0]
    expected = ModuleAssembly.from_serial_modules(robco, ids).to_urdf()

    def no_tree(self, prefix=""):
        raise AssertionError("the writer must not build the kinematic tree")

    monkeypatch.setattr(ModuleAssembly, "tree", no_tree)
    assert urdf_of_serial(robco, ids) == expected
    assert ModuleAssembly.from_serial_modules(robco, ids).to_urdf() == expected


def test_pickled_set_leaves_the_fragments_behind(robco):
    ids = serial_chains(robco, 1, seed=9)[0]
    text = urdf_of_serial(robco, ids)
    assert any(key[0] == "urdf-fragments" for key in robco._cache if isinstance(key, tuple))
    copy = pickle.loads(pickle.dumps(robco))
    assert copy._cache == {}
    assert urdf_of_serial(copy, ids) == text


def test_options_are_one_validated_object(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, ["base", "J1", "eef"])
    assert A.to_urdf("r", mesh_uri="package", prefix="a_") == assembly_to_urdf(
        A, "r", UrdfOptions(prefix="a_", mesh_uri="package")
    )
    assert assembly_to_urdf(A, "r", UrdfOptions(prefix="a_"), mesh_uri="package") == A.to_urdf(
        "r", mesh_uri="package", prefix="a_"
    )
    for bad in ({"mesh_uri": "ftp"}, {"wrl": "drop"}, {"package": "../x"}, {"prefix": "a b"}):
        with pytest.raises(InputError, match=next(iter(bad))):
            UrdfOptions(**bad)
    with pytest.raises(InputError, match="unknown URDF option"):
        assembly_to_urdf(A, None, mesh="file")
    with pytest.raises(InputError, match="UrdfOptions"):
        assembly_to_urdf(A, None, {"mesh_uri": "file"})  # type: ignore[arg-type]


def test_xacro_takes_the_same_options(improv):
    A = ModuleAssembly.from_serial_modules(improv, exp1_space(improv)[0])  # a set with meshes
    by_object = A.to_xacro("m", options=UrdfOptions(mesh_uri="package", package="pkg"))
    assert by_object == A.to_xacro("m", mesh_uri="package", package="pkg")
    assert 'filename="package://pkg/' in by_object and "${prefix}m1_" in by_object


def test_xacro_refuses_bad_options(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, ["base", "J1", "eef"])
    with pytest.raises(InputError, match="unknown xacro option"):
        A.to_xacro("m", mesh="package")
    with pytest.raises(InputError, match="mesh_uri"):
        A.to_xacro("m", mesh_uri="ftp")


_DB = ModulesDB.from_name("geometric_primitive_modules")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ids=st.lists(st.sampled_from(_DB.ids), min_size=0, max_size=9),
    prefix=st.sampled_from(["", "a_", "${prefix}"]),
    mesh_uri=st.sampled_from(["file", "package", "relative", "path"]),
    placed=st.booleans(),
)
def test_any_id_list_gives_the_assemblys_text_or_error(ids, prefix, mesh_uri, placed):
    placement = PLACED if placed else None
    options = {"prefix": prefix, "mesh_uri": mesh_uri}
    built = _outcome(lambda: ModuleAssembly.from_serial_modules(_DB, ids, placement).to_urdf(**options))
    assert _outcome(lambda: urdf_of_serial(_DB, ids, base_placement=placement, **options)) == built
    if isinstance(built, str):
        assert np.array_equal(placement is not None, "world_to_base_link" in built)


@pytest.fixture(scope="module")
def branched(tmp_path_factory) -> ModulesDB:
    return ModulesDB.from_json_file(write_db(tmp_path_factory.mktemp("branched"), branched_json()))


_ARM = ["J1", "J2", "P1", "tee", "l_15", "i_30", "eef"]


def _tree(db: ModulesDB, choices: list[tuple[int, int]]) -> ModuleAssembly:
    """A tree grown from base3 by adding modules at free connectors (incompatible choices are skipped)."""
    A = ModuleAssembly(db, ["base3"])
    for pick_module, pick_connector in choices:
        used = {(a, ca) for a, ca, _, _ in A.connections} | {(b, cb) for _, _, b, cb in A.connections}
        free = sorted((i, c) for i, m in enumerate(A.module_ids) for c in db.by_id(m).connectors
                      if (i, c) not in used and (i, c) != A.base_connector)  # fmt: skip
        if not free:
            break
        try:
            A.add(_ARM[pick_module % len(_ARM)], free[pick_connector % len(free)])
        except TimorError:
            continue
    return A


def _renumbered(A: ModuleAssembly, rng) -> ModuleAssembly:
    """The same robot with its module instances numbered in another order (the base need not be instance 0)."""
    order = list(range(len(A.module_ids)))
    rng.shuffle(order)
    new = {old: k for k, old in enumerate(order)}
    connections = [(new[a], ca, new[b], cb) for a, ca, b, cb in A.connections]
    base = (new[A.base_connector[0]], A.base_connector[1])
    return ModuleAssembly(A.db, [A.module_ids[old] for old in order], connections, base)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=12), st.booleans(), st.randoms()
)
def test_trees_follow_the_kinematic_tree_and_pass_check_urdf(branched, choices, prefixed, rng):
    """A tree's URDF has the kinematic tree's links and joints in its depth-first order, tool frames after them,
    and urdfdom's check_urdf (robot_state_publisher's and MoveIt's parser) reads it; for any numbering of the
    module instances."""
    A = _renumbered(_tree(branched, choices), rng)
    prefix = "p_" if prefixed else ""
    text = A.to_urdf(prefix=prefix)
    tree = A.tree(prefix)
    root = ET.fromstring(text)
    tcp = tree.tcp_frames
    assert [e.get("name") for e in root.findall("link")] == [link.name for link in tree.links] + [t.name for t in tcp]
    joints = [str(link.joint_name) for link in tree.links[1:]] + [f"{tree.links[t.link].name}_to_{t.name}" for t in tcp]
    assert [e.get("name") for e in root.findall("joint")] == joints
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "tree.urdf"
        path.write_text(text)
        check_urdf_file(path)


@pytest.mark.invalid_urdf  # bad.urdf is refused on purpose
def test_check_urdf_runs_cmeels_binary_as_its_wrapper_would(tmp_path):
    """Pinocchio's wheels install check_urdf as a Python wrapper (cmeel): check_urdf runs the binary it wraps, with
    the wrapper's library path, and gets the wrapper's verdict and text; a command that is no such wrapper stays."""
    import subprocess

    from timor_core.export.formats.urdfdom import check_urdf, check_urdf_command, unwrapped

    command = check_urdf_command()
    if command is None or b"cmeel_run" not in Path(command).read_bytes()[:512]:
        pytest.skip(f"check_urdf here is not cmeel's wrapper: {command}")
    binary, env = unwrapped(command)
    assert binary != command and Path(binary).parent.parent.name == "cmeel.prefix"
    assert env is not None and str(Path(binary).parent.parent / "lib") in env["LD_LIBRARY_PATH"].split(":")
    good = tmp_path / "good.urdf"
    good.write_text('<robot name="r"><link name="a"/><link name="b"/>'
                    '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>')  # fmt: skip
    bad = tmp_path / "bad.urdf"
    bad.write_text('<robot name="r"><link name="a"/><joint name="j" type="fixed"><parent link="a"/></joint></robot>')
    for path, accepted in ((good, True), (bad, False)):
        wrapper = subprocess.run([command, str(path)], capture_output=True, text=True, timeout=60)
        ok, text = check_urdf(path)
        assert ok is accepted and (wrapper.returncode == 0) is accepted
        assert text == wrapper.stdout[-2000:] + wrapper.stderr[-2000:]
    script = tmp_path / "check_urdf"
    script.write_text("#!/bin/sh\necho cmeel_run\n")
    script.chmod(0o755)
    assert unwrapped(str(script)) == (str(script), None)
