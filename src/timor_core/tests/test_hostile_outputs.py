"""What timor writes, under hostile names and hostile output paths (issue 12).

XML: every name and attribute is validated or escaped and generated names are unique, checked with a real XML
parser and urdfdom's ``check_urdf``. Files: atomic, permissions kept, symlinks written through, special files and
inputs refused, multi-file outputs all or nothing, nothing outside the output folder.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import primitives_json, write_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB
from timor_core.common.fileio import (
    atomic_write_text,
    output_target,
    refuse_overwriting_inputs,
    write_files,
)
from timor_core.common.names import check_name, check_prefix, ros_name, xml_escape
from timor_core.errors import InputError
from timor_core.export.formats.moveit_config import write_moveit_config
from timor_core.export.formats.urdfdom import check_urdf

CHAIN = ("base", "J2", "i_45", "J2", "J2", "eef")


def _check_urdf(path: Path) -> None:
    """urdfdom's own checker (cmeel's urdfdom wheel, which Pinocchio brings, or Debian's liburdfdom-tools)."""
    ok, output = check_urdf(path)
    assert ok, output


def _names(urdf: str) -> tuple[list[str], list[str]]:
    root = ET.fromstring(urdf)
    return [e.get("name") for e in root.iter("link")], [e.get("name") for e in root.iter("joint")]


# -- XML -----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ['a"/><evil/><x y="', "a b", "ä_", "a/b", "${x}", "x" * 201, 5])
def test_every_exporter_refuses_a_prefix_that_is_not_a_name(primitives, prefix):
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    for export in (A.to_urdf, A.to_srdf, A.to_xacro):
        with pytest.raises(InputError, match="prefix"):
            export(prefix=prefix)


@pytest.mark.parametrize("name", ["../../../evil", "a/b", "..", "", "a\nb", 'x"y', "x" * 201])
def test_robot_names_are_never_paths_or_markup(primitives, tmp_path, name):
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    with pytest.raises(InputError, match="name"):
        A.to_urdf(name)
    out = tmp_path / "a" / "cfg"
    with pytest.raises(InputError, match="name"):
        write_moveit_config(A, out, name=name, n_samples=5)
    assert not (tmp_path / "a").exists()  # refused before anything was written
    assert not list(tmp_path.parent.glob("evil*")) and not list(tmp_path.glob("**/evil*"))


def test_mesh_file_names_with_markup_give_well_formed_urdf(tmp_path):
    data = primitives_json()
    weird = 'L1 "q" & <x>.stl'
    folder = tmp_path / "set"
    folder.mkdir()
    _write_cube(folder / weird)
    body = data["modules"][0]["bodies"][0]
    body["visual"] = [{"type": "mesh", "parameters": {"file": weird}, "pose": _eye()}]
    db = ModulesDB.from_json_file(write_db(folder, data))
    A = ModuleAssembly.from_serial_modules(db, CHAIN)
    for mode in ("file", "relative", "package"):
        urdf = A.to_urdf(mesh_uri=mode)
        root = ET.fromstring(urdf)  # well-formed
        files = [m.get("filename") for m in root.iter("mesh")]
        assert any(f.endswith(weird) for f in files), files
    path = tmp_path / "robot.urdf"
    A.to_urdf(write_to=path)
    _check_urdf(path)


def _eye() -> list[list[float]]:
    return [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]


def _write_cube(path: Path) -> None:
    import trimesh

    trimesh.creation.box(extents=(0.05, 0.05, 0.05)).export(path, file_type="stl")


def test_ids_that_differ_only_in_non_ascii_characters_stay_distinct():
    assert ros_name("m1äöü") != ros_name("m1éèê")
    assert ros_name("J2_proximal") == "J2_proximal"  # valid names are kept as they are
    data = primitives_json()
    j2 = next(m for m in data["modules"] if m["header"]["ID"] == "J2")
    for body, new in zip(j2["bodies"], ("bödy", "bödý")):  # two bodies of one module: m1_b_dy ... twice before
        old = body["ID"]
        body["ID"] = new
        for joint in j2["joints"]:
            joint["parent"] = new if joint["parent"] == old else joint["parent"]
            joint["child"] = new if joint["child"] == old else joint["child"]
    db = ModulesDB.from_json_data(data, name="nonascii")
    A = ModuleAssembly.from_serial_modules(db, ("base", "J2", "eef"))
    links, joints = _names(A.to_urdf())
    assert len(links) == len(set(links)) and len(joints) == len(set(joints))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_any_two_body_ids_give_distinct_valid_link_names(tmp_path, a, b):
    names = {ros_name(a), ros_name(b)}
    assert len(names) == (1 if a == b else 2)
    for n in names:
        assert n and all(ch.isascii() and (ch.isalnum() or ch == "_") for ch in n)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40))
def test_names_are_checked_or_escaped(text):
    try:
        escaped = xml_escape(text)
    except InputError:
        assert any(ord(c) < 32 and c not in "\t\n\r" or 0xD800 <= ord(c) <= 0xDFFF or ord(c) > 0xFFFD for c in text)
    else:
        assert ET.fromstring(f'<a b="{escaped}">{escaped}</a>').get("b") is not None
    for check in (check_prefix, check_name):
        try:
            out = check(text)
        except InputError:
            continue
        assert out == text and "/" not in text and '"' not in text and ".." not in text


def test_urdfs_of_many_assemblies_pass_check_urdf(primitives, robco, tmp_path):
    for db, chain in ((primitives, CHAIN), (robco, ("base", "J", "L_250", "J", "L_150", "J", "gripper"))):
        A = ModuleAssembly.from_serial_modules(db, chain)
        for prefix in ("", "left_", "r2_"):
            path = tmp_path / f"{db.name}_{prefix}.urdf"
            A.to_urdf(prefix=prefix, write_to=path)
            _check_urdf(path)


@pytest.mark.invalid_urdf  # it writes a URDF urdfdom refuses
def test_check_urdf_gives_the_verdict_and_output_of_the_installed_command(tmp_path, monkeypatch):
    """check_urdf runs the binary behind cmeel's wrapper script (pip's pin) directly, its libraries on
    ``LD_LIBRARY_PATH`` after any already there: the same verdict and output as the command as installed, for a URDF
    it accepts and one it refuses. A command that is no such wrapper, or whose binary is missing, runs as it is."""
    from timor_core.export.formats import urdfdom

    command = urdfdom.check_urdf_command()
    assert command is not None
    good, bad = tmp_path / "good.urdf", tmp_path / "bad.urdf"
    ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ("base", "J", "gripper")).to_urdf(
        write_to=good
    )
    bad.write_text('<robot name="r"><link name="a"/><joint name="j" type="fixed"><parent link="a"/>'
                   '<child link="b"/></joint></robot>')  # fmt: skip
    monkeypatch.setenv("LD_LIBRARY_PATH", "/nonexistent/lib")
    for path, verdict in ((good, True), (bad, False)):
        installed = subprocess.run([command, str(path)], capture_output=True, text=True, timeout=60)
        assert (installed.returncode == 0 and "Successfully Parsed XML" in installed.stdout) is verdict
        assert check_urdf(path) == (verdict, installed.stdout[-2000:] + installed.stderr[-2000:])
    executable, env = urdfdom._unwrapped(command)
    if b"cmeel_run" in Path(command).read_bytes():  # pip's pin: the binary of the prefix, not the Python script
        assert Path(executable).read_bytes()[:4] == b"\x7fELF" and Path(executable).parent.parent.name == "cmeel.prefix"
        assert env is not None and env["LD_LIBRARY_PATH"].split(":")[1:] == ["/nonexistent/lib"]
    wrapper = "#!/usr/bin/python\nfrom cmeel.run import cmeel_run\ncmeel_run()\n"
    script = tmp_path / "no_such_tool"  # no binary of that name in any prefix
    script.write_text(wrapper)
    assert urdfdom._unwrapped(str(script)) == (str(script), None), "not beside this Python"
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    for text in ("#!/bin/sh\necho plain\n", wrapper):
        script.write_text(text)
        assert urdfdom._unwrapped(str(script)) == (str(script), None)
    assert urdfdom._unwrapped(str(tmp_path / "missing")) == (str(tmp_path / "missing"), None)


# -- files ---------------------------------------------------------------------------------------------------------


@pytest.mark.invalid_urdf  # it writes placeholder text into .urdf files
def test_overwriting_keeps_the_mode_and_new_files_follow_the_umask(tmp_path):
    target = tmp_path / "robot.urdf"
    target.write_text("old")
    os.chmod(target, 0o640)
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "fresh.urdf", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "fresh.urdf").stat().st_mode) == 0o640


@pytest.mark.invalid_urdf  # it writes placeholder text into .urdf files
def test_symlinks_are_written_through(tmp_path):
    real = tmp_path / "real" / "robot.urdf"
    real.parent.mkdir()
    real.write_text("old")
    link = tmp_path / "link.urdf"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    dangling = tmp_path / "dangling.urdf"
    dangling.symlink_to(tmp_path / "real" / "new.urdf")
    atomic_write_text(dangling, "created")
    assert dangling.is_symlink() and (tmp_path / "real" / "new.urdf").read_text() == "created"


@pytest.mark.parametrize("target", ["/proc/version", "/dev/null", "FOLDER"])
def test_special_targets_are_refused_naming_the_path(tmp_path, target):
    path = tmp_path if target == "FOLDER" else Path(target)
    with pytest.raises(InputError) as info:
        atomic_write_text(path, "x")
    assert str(path) in str(info.value) and ".tmp" not in str(info.value)


def test_outputs_are_never_inputs(tmp_path):
    task = tmp_path / "task.json"
    task.write_text("{}")
    hard = tmp_path / "hard.json"
    os.link(task, hard)
    soft = tmp_path / "soft.json"
    soft.symlink_to(task)
    for out in (task, hard, soft, tmp_path / "." / "task.json"):
        with pytest.raises(InputError, match="overwrite the input"):
            refuse_overwriting_inputs(out, task)
    refuse_overwriting_inputs(tmp_path / "solution.json", task)


def test_write_files_is_all_or_nothing(tmp_path):
    keep = tmp_path / "a.yaml"
    keep.write_text("user's")
    (tmp_path / "blocked.yaml").mkdir()
    with pytest.raises(InputError, match="blocked.yaml"):
        write_files({keep: "new", tmp_path / "b.yaml": "new", tmp_path / "blocked.yaml": "new"})
    assert keep.read_text() == "user's" and not (tmp_path / "b.yaml").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.yaml", "blocked.yaml"]  # no temp files left
    written = write_files({keep: "new", tmp_path / "sub" / "b.yaml": "new"})
    assert [p.read_text() for p in written] == ["new", "new"]


def test_moveit_config_checks_every_target_before_writing(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    out = tmp_path / "cfg"
    (out / "joint_limits.yaml").mkdir(parents=True)
    (out / "kinematics.yaml").write_text("user's")
    with pytest.raises(InputError, match="joint_limits.yaml"):
        write_moveit_config(A, out, n_samples=5)
    assert sorted(p.name for p in out.iterdir()) == ["joint_limits.yaml", "kinematics.yaml"]
    assert (out / "kinematics.yaml").read_text() == "user's"
    assert output_target(out / "kinematics.yaml") == (out / "kinematics.yaml").resolve()


@pytest.mark.parametrize("kind", ["urdf", "xacro", "srdf"])
def test_a_description_into_a_folder_that_cannot_be_made_is_an_input_error(tmp_path, kind):
    """``to_urdf/to_xacro/to_srdf(write_to=...)`` made the folder themselves before the atomic write, outside its
    error handling: a path under a file ended in a raw NotADirectoryError (exit 3 from the CLI); the atomic write
    makes the folder and names the path."""
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ["base", "J", "gripper"])
    (tmp_path / "plain").write_text("a file, not a folder")
    with pytest.raises(InputError, match="plain"):
        getattr(assembly, f"to_{kind}")(write_to=tmp_path / "plain" / f"robot.{kind}")
