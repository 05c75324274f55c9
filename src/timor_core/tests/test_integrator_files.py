"""Files an integrator writes on Windows (session 57): a UTF-8 byte-order mark before a hardware profile, a module
set or a task (Notepad before 2019, PowerShell 5's ``Set-Content -Encoding UTF8``) was refused as invalid JSON
("Unexpected UTF-8 BOM"); RFC 8259 lets a parser ignore it, as the EDS reader and the URDF import already do.
Windows line endings in a profile were read already."""

from __future__ import annotations

import json
import shutil

import pytest

from timor_core import ModulesDB
from timor_core.cli.app import main
from timor_core.task.task import Task

BOM = b"\xef\xbb\xbf"
ROBCO = ["base", "J", "L_250", "J", "gripper"]


@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_a_profile_and_a_module_set_with_a_byte_order_mark_are_read(tmp_path, capsys, newline):
    example = ModulesDB.from_name("robco_like").base_dir
    shutil.copytree(example, tmp_path / "set")
    for name in ("modules.json", "hardware_canopen.json"):
        path = tmp_path / "set" / name
        path.write_bytes(BOM + path.read_text().replace("\n", newline).encode())
    code = main(["bringup", "--db", str(tmp_path / "set"), "--modules", *ROBCO, "--hardware", "canopen",
                 "-o", str(tmp_path / "ws"), "--samples", "3"])  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert ModulesDB.from_json_file(tmp_path / "set" / "modules.json").ids == ModulesDB.from_name("robco_like").ids


def test_a_task_with_a_byte_order_mark_is_read(tmp_path):
    task = Task.from_name("pick_and_place")
    path = tmp_path / "task.json"
    path.write_bytes(BOM + json.dumps(task.to_json_data()).encode())
    assert Task.from_json_file(path).to_json_data() == task.to_json_data()


@pytest.mark.parametrize("encoding, name", [("utf-16", "UTF-16"), ("utf-16-be", None), ("utf-32", "UTF-32")])
def test_a_task_saved_as_utf_16_or_32_is_refused_saying_what_it_is(tmp_path, capsys, encoding, name):
    """Notepad's "Unicode" and PowerShell 5's default ``Out-File`` write UTF-16 with a byte-order mark: the error said
    only "not UTF-8 text (byte 0)"; it names the encoding and what to do where the mark says it (s57-review2)."""
    path = tmp_path / "task.json"
    path.write_bytes(json.dumps(Task.from_name("pick_and_place").to_json_data()).encode(encoding))
    assert main(["task", "validate", str(path)]) == 1  # (validate: 1, the file is not a valid task)
    err = capsys.readouterr().err
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    if name is None:  # no byte-order mark: nothing says which encoding it is ("invalid JSON": NUL is UTF-8)
        assert "save it as UTF-8" not in err
    else:
        assert f"it is {name} (byte-order mark); save it as UTF-8" in err, err
