"""Hostile input files and texts (issue 12): bounded reading, typed errors naming the file and field.

Every reader goes through ``timor_core.limits`` / ``jsonfields``: regular files only, size, depth, duplicate keys,
oversized numbers and strings; meshes within their own size and triangle limits. A fuzz test feeds the loaders
random and mutated JSON under a memory cap: each input loads or raises a TimorError, never anything else.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import REPO, primitives_json, write_db
from hostile import memory_cap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB, TimorError
from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError, InputError, MeshError
from timor_core.limits import Limits, limits, override_limits, read_input_bytes, set_limits
from timor_core.model.meshes import clear_mesh_cache, load_mesh
from timor_core.model.validation import validate_db_file
from timor_core.search import SearchResult, load_space
from timor_core.task import Task

DEEP = "[" * 100_000 + "]" * 100_000


# -- files that are not files ------------------------------------------------------------------------------------


def test_special_files_are_refused_before_reading(tmp_path):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    for path, needle in (("/dev/zero", "not a regular file"), (fifo, "not a regular file"), (tmp_path, "folder")):
        for load in (jf.load_json_file, ModulesDB.from_json_file, Task.from_json_file):
            with pytest.raises(InputError, match=needle) as info:
                load(path)
            assert str(path) in str(info.value)
    problems = validate_db_file(Path("/dev/zero"))
    assert len(problems) == 1 and "not a regular file" in str(problems[0])


def test_size_limit_is_checked_before_reading_and_can_be_raised(tmp_path):
    path = write_db(tmp_path, primitives_json())
    size = path.stat().st_size
    with override_limits(max_file_bytes=size - 1):
        with pytest.raises(FormatError, match="max_file_bytes") as info:
            ModulesDB.from_json_file(path)
        assert "TIMOR_MAX_FILE_BYTES" in str(info.value)
        with pytest.raises(InputError, match="max_file_bytes"):
            read_input_bytes(path)
    with override_limits(max_file_bytes=size):
        assert len(ModulesDB.from_json_file(path)) == 11
    assert limits().max_file_bytes == Limits().max_file_bytes  # the override ended with its block


# -- JSON that parses into trouble ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, needle, json_path",
    [
        (DEEP, "nested", None),
        ("[" * 65 + "]" * 65, "max_json_depth", None),
        ('{"modules": [], "modules": [1]}', "duplicate key 'modules'", "$"),
        ('{"a": {"b": [{"c": 1, "c": 2}]}}', "duplicate key 'c'", "$.a.b[0]"),
        ('{"modules": [' + "9" * 5001 + "]}", "digits", None),
        ('{"modules": [' + "9" * 401 + "]}", "digits", None),
        ('{"x": [1, NaN]}', "NaN", "$.x[1]"),
        ('{"x": -Infinity}', "Infinity", "$.x"),
        ("{not json", "invalid JSON at line 1", None),
        ("", "invalid JSON", None),
    ],
)
def test_hostile_json_is_a_format_error_naming_file_and_path(tmp_path, text, needle, json_path):
    path = tmp_path / "in.json"
    path.write_text(text)
    with memory_cap():
        with pytest.raises(FormatError) as info:
            jf.load_json_file(path)
    err = info.value
    assert needle in str(err) and err.file == str(path)
    if json_path is not None:
        assert err.path == json_path
    assert "NaN" not in str(err) or "NaN" in text  # a huge integer is not blamed on NaN/Infinity


@pytest.mark.parametrize("load", ["db", "task", "result", "space", "assembly"])
def test_every_loader_refuses_deep_json_with_a_typed_error(tmp_path, load, primitives):
    path = tmp_path / "deep.json"
    path.write_text('{"modules": ' + DEEP + "}")
    with memory_cap(), pytest.raises(TimorError, match="nested"):
        if load == "db":
            ModulesDB.from_json_file(path)
        elif load == "task":
            Task.from_json_file(path)
        elif load == "result":
            SearchResult.from_json_file(path)
        elif load == "space":
            load_space(path, primitives)
        else:
            ModuleAssembly.from_json_file(primitives, path)


def test_long_strings_and_huge_numbers_in_fields(tmp_path):
    data = primitives_json()
    data["modules"][0]["header"]["ID"] = "x" * (Limits().max_string_chars + 1)
    with pytest.raises(FormatError, match="max_string_chars") as info:
        ModulesDB.from_json_file(write_db(tmp_path, data))
    assert info.value.path == "$.modules[0].header.ID"
    data = primitives_json()
    data["modules"][0]["bodies"][0]["mass"] = 10**350  # 351 digits: within the digit limit, beyond a float
    with pytest.raises(FormatError, match="too large"):  # from a file: refused as JSON
        ModulesDB.from_json_file(write_db(tmp_path, data))
    with pytest.raises(TimorError) as info2:  # as parsed data: refused by the field, naming it
        ModulesDB.from_json_data(data, name="big")
    assert "$.modules[0].bodies[0].mass" in str(info2.value)


def test_embedded_names_are_never_paths():
    with pytest.raises(TimorError, match="no embedded module set"):
        ModulesDB.from_name("../geometric_primitive_modules")
    with pytest.raises(TimorError, match="no embedded task"):
        Task.from_name("../../data/tasks/pick_and_place")


# -- meshes ---------------------------------------------------------------------------------------------------------


def _db_with_mesh(tmp_path: Path, file_name: str, content: bytes | None) -> Path:
    data = primitives_json()
    body = data["modules"][0]["bodies"][0]
    body["collision"] = [{"type": "mesh", "parameters": {"file": file_name}, "pose": np.eye(4).tolist()}]
    if content is not None:
        (tmp_path / file_name).write_bytes(content)
    return write_db(tmp_path, data)


def _binary_stl(n_triangles: int) -> bytes:
    rng = np.random.default_rng(0)
    out = bytearray(b"\0" * 80 + np.uint32(n_triangles).tobytes())
    record = np.zeros(n_triangles, dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    record["v"] = rng.random((n_triangles, 3, 3))
    return bytes(out) + record.tobytes()


def test_mesh_limits_and_broken_meshes_are_mesh_errors(tmp_path):
    clear_mesh_cache()
    stl = _binary_stl(50)
    path = tmp_path / "m.stl"
    path.write_bytes(stl)
    assert len(load_mesh(path).faces) == 50
    clear_mesh_cache()
    with override_limits(max_mesh_triangles=49), pytest.raises(MeshError, match="max_mesh_triangles"):
        load_mesh(path)
    clear_mesh_cache()
    with override_limits(max_mesh_bytes=len(stl) - 1), pytest.raises(MeshError, match="max_mesh_bytes"):
        load_mesh(path)
    garbage = tmp_path / "g.stl"
    garbage.write_bytes(b"\x00\xff" * 100)
    with pytest.raises(MeshError):
        load_mesh(garbage)
    truncated = tmp_path / "t.stl"
    truncated.write_bytes(stl[:-30])
    with pytest.raises(MeshError):
        load_mesh(truncated)
    folder = tmp_path / "dir.stl"
    folder.mkdir()
    with pytest.raises(MeshError, match="regular file"):
        load_mesh(folder)


def test_a_gzip_bomb_vrml_stays_small(tmp_path):
    bomb = tmp_path / "bomb.wrl"
    bomb.write_bytes(gzip.compress(b"#VRML V2.0 utf8\n" + b" " * (8 * 2**20)))
    assert bomb.stat().st_size < 64 * 1024
    with override_limits(max_mesh_bytes=2**20), memory_cap(), pytest.raises(MeshError, match="max_mesh_bytes"):
        load_mesh(bomb)


def test_unusable_mesh_names_are_mesh_errors_naming_the_field(tmp_path):
    path = _db_with_mesh(tmp_path, "x" * 300 + ".stl", None)
    with pytest.raises(MeshError) as info:
        ModulesDB.from_json_file(path)
    assert info.value.path == "$.modules[0].bodies[0].collision[0].parameters.file"
    assert "too long" in str(info.value).lower()
    for name in ("../outside.stl", "/etc/passwd.stl", "sub/../../x.stl"):
        with pytest.raises(MeshError, match="outside"):
            ModulesDB.from_json_file(_db_with_mesh(tmp_path, name, None))


# -- the fuzz -------------------------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5),
    max_leaves=30,
)
GPM = json.loads((REPO / "src/timor_core/timor_core/data/geometric_primitive_modules/modules.json").read_text())
PICK = json.loads((REPO / "src/timor_core/timor_core/data/tasks/pick_and_place.json").read_text())


def json_paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from json_paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from json_paths(v, (*prefix, i))


def _mutated(base, data):
    """The base document with one node (chosen by hypothesis) replaced by a random JSON value."""
    doc = copy.deepcopy(base)
    paths = list(json_paths(doc))
    where = data.draw(st.sampled_from(paths[1:]))
    replacement = data.draw(JSON_VALUES | st.sampled_from([DEEP[:2000] + DEEP[-2000:], "x" * 5000, 10**400, -1, 0]))
    node = doc
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = replacement
    return doc


def _loads_or_timor_error(load, value) -> None:
    try:
        load(value)
    except TimorError:
        pass


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_fuzz_module_sets(data):
    doc = _mutated(GPM, data)
    with memory_cap():
        _loads_or_timor_error(lambda d: ModulesDB.from_json_data(d, name="fuzz"), doc)
        _loads_or_timor_error(lambda d: jf.parse_json_text(json.dumps(d, allow_nan=True)), doc)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.data())
def test_fuzz_tasks(data):
    doc = _mutated(PICK, data)
    with memory_cap():
        _loads_or_timor_error(Task.from_json_data, doc)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(JSON_VALUES)
def test_fuzz_any_json_value(primitives, value):
    with memory_cap():
        _loads_or_timor_error(lambda d: ModulesDB.from_json_data(d, name="fuzz"), value)
        _loads_or_timor_error(Task.from_json_data, value)
        _loads_or_timor_error(lambda d: SearchResult.from_json_data(d), value)
        _loads_or_timor_error(lambda d: ModuleAssembly.from_json_data(primitives, d), value)
        if isinstance(value, dict):
            _loads_or_timor_error(lambda d: load_space(d, primitives), value)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_fuzz_json_text(text):
    _loads_or_timor_error(jf.parse_json_text, text)


# -- the README's table ---------------------------------------------------------------------------------------------


def test_readme_limits_table_matches_the_code():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| ([\d.]+) \|", text.split("limits-table", 1)[1], re.M))
    defaults = {k: v for k, v in vars(Limits()).items()}
    assert set(rows) == set(defaults)
    for name, value in defaults.items():
        assert float(rows[name]) == value, name


def test_limits_from_the_environment_and_refused_values(monkeypatch):
    import subprocess
    import sys

    code = "from timor_core.limits import limits; print(limits().max_dof)"
    env = dict(os.environ, TIMOR_MAX_DOF="48")
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout.strip() == "48"
    env["TIMOR_MAX_DOF"] = "many"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert proc.returncode != 0 and "TIMOR_MAX_DOF" in proc.stderr
    for bad in (0, -1, float("nan"), float("inf"), True):
        with pytest.raises(InputError):
            set_limits(max_dof=bad)
    assert limits().max_dof == Limits().max_dof
