"""A server opens a task file only inside the folders it trusts (issue 26).

``Search.action``'s ``task_path`` let any peer on the ROS network make the search node open any file it could read;
it was refused only if it did not parse. ``timor_core.task.trusted.trusted_task_path`` is the policy the node applies
(its ``trusted_task_folders`` parameter; default: the embedded tasks and its working folder).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hostile import memory_cap, time_cap
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.errors import InputError, TimorError, UntrustedPathError
from timor_core.task import Task
from timor_core.task.trusted import default_trusted_folders, trusted_task_path

EMBEDDED = Path(__file__).resolve().parents[1] / "timor_core" / "data" / "tasks" / "pick_and_place.json"


def test_a_task_inside_a_trusted_folder_is_opened(tmp_path):
    (tmp_path / "tasks").mkdir()
    task = tmp_path / "tasks" / "t.json"
    task.write_text(EMBEDDED.read_text())
    assert trusted_task_path(str(task), [str(tmp_path)]) == task.resolve()
    assert Task.from_json_file(trusted_task_path(task, [tmp_path / "tasks"])).goals


@pytest.mark.parametrize("path", ["/etc/passwd", "/dev/zero", "/proc/self/environ", "/nonexistent/task.json"])
def test_anything_else_is_refused_naming_the_path_and_the_folders(tmp_path, path):
    with pytest.raises(UntrustedPathError, match="outside the trusted task folders") as err:
        trusted_task_path(path, [tmp_path])
    assert path in str(err.value) and str(tmp_path.resolve()) in str(err.value)


def test_a_link_out_of_a_trusted_folder_is_followed_and_refused(tmp_path):
    inside = tmp_path / "trusted"
    inside.mkdir()
    (inside / "escape.json").symlink_to("/etc/passwd")
    (inside / "up").symlink_to(tmp_path)
    for path in (inside / "escape.json", inside / "up" / "secret.json", inside / ".." / "secret.json"):
        with pytest.raises(UntrustedPathError):
            trusted_task_path(str(path), [inside])


def test_a_folder_named_like_a_trusted_one_is_not_inside_it(tmp_path):
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks-evil").mkdir()
    with pytest.raises(UntrustedPathError):
        trusted_task_path(str(tmp_path / "tasks-evil" / "t.json"), [tmp_path / "tasks"])


def test_the_defaults_are_the_embedded_tasks_and_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert default_trusted_folders() == (EMBEDDED.parent.resolve(), tmp_path.resolve())
    assert trusted_task_path(str(EMBEDDED)) == EMBEDDED.resolve()
    assert trusted_task_path(str(tmp_path / "mine.json"), []) == (tmp_path / "mine.json").resolve()
    with pytest.raises(UntrustedPathError):
        trusted_task_path("/etc/passwd")


@pytest.mark.parametrize(
    "path, needle",
    [("relative/task.json", "absolute"), ("/tmp/a\x00b", "NUL"), ("/" + "a" * 5000, "max_path_chars"), (7, "path")],
)
def test_bad_text_is_an_input_error(path, needle):
    with pytest.raises(InputError, match=needle):
        trusted_task_path(path, ["/tmp"])


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.lists(st.text(max_size=40), max_size=3))
def test_fuzz_any_text_is_refused_or_lies_inside_a_trusted_folder(text, folders):
    with memory_cap(), time_cap(30):
        try:
            resolved = trusted_task_path(text, folders)
        except TimorError:
            return
    trusted = [Path(os.path.realpath(f)) for f in folders] if folders else list(default_trusted_folders())
    assert any(resolved == f or f in resolved.parents for f in trusted)
