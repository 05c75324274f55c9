"""Saving a task elsewhere carries its mesh assets along (issue 13, item 4).

A task's mesh obstacles name files relative to its task folder. ``Task.to_json_file`` used to write only the
JSON, so a task saved into another folder pointed at files that were not there and failed to reload.
"""

from __future__ import annotations

import glob
import json
from pathlib import Path

import numpy as np
import pytest
import trimesh
from conftest import SHARED

from timor_core.errors import InputError
from timor_core.task import Task

TASKS = SHARED / "data" / "cobra" / "tasks"


def _task_with_mesh(root: Path, task_id: str = "cells/mesh_task", mesh_file: str = "assets/cube.stl") -> Path:
    """A task folder ``root`` with one mesh obstacle, written as ``root/<task_id>.json``."""
    (root / mesh_file).parent.mkdir(parents=True, exist_ok=True)
    trimesh.creation.box(extents=(0.2, 0.2, 0.2)).export(root / mesh_file)
    pose = np.eye(4)
    pose[:3, 3] = (0.5, 0.0, 0.1)
    data = {
        "header": {"ID": task_id},
        "obstacles": [
            {
                "ID": "part",
                "collision": [{"type": "mesh", "parameters": {"file": mesh_file}, "pose": pose.tolist()}],
            }
        ],
    }
    path = root / f"{task_id}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))
    return path


def test_saving_elsewhere_copies_the_meshes(tmp_path):
    task = Task.from_json_file(_task_with_mesh(tmp_path / "src"))
    out = task.to_json_file(tmp_path / "elsewhere" / "saved.json")
    assert (tmp_path / "elsewhere" / "assets" / "cube.stl").is_file()
    again = Task.from_json_file(out)
    assert again.to_json_data() == task.to_json_data()
    assert again.meshes()[0].path.resolve() == (tmp_path / "elsewhere" / "assets" / "cube.stl").resolve()
    assert len(again.meshes()[0].load().vertices) == len(task.meshes()[0].load().vertices)


def test_saving_into_a_folder_uses_the_task_id(tmp_path):
    task = Task.from_json_file(_task_with_mesh(tmp_path / "src"))
    folder = tmp_path / "library"
    folder.mkdir()
    out = task.to_json_file(folder)
    assert out == folder / "cells" / "mesh_task.json"
    assert (folder / "assets" / "cube.stl").is_file()  # the task folder of cells/mesh_task is library/
    assert Task.from_json_file(out).to_json_data() == task.to_json_data()


def test_saving_never_overwrites_a_different_asset_or_escapes(tmp_path):
    task = Task.from_json_file(_task_with_mesh(tmp_path / "src"))
    dst = tmp_path / "other"
    (dst / "assets").mkdir(parents=True)
    (dst / "assets" / "cube.stl").write_text("a different file of the user's")
    with pytest.raises(InputError, match="not overwritten"):
        task.to_json_file(dst / "t.json")
    assert (dst / "assets" / "cube.stl").read_text() == "a different file of the user's"
    assert not (dst / "t.json").exists()
    # an ID that would climb out of the folder never becomes a path
    evil = Task.from_json_file(_task_with_mesh(tmp_path / "evil_src", task_id="x/evil"))
    evil.header.id = "../../evil"  # as a hostile file could state it
    folder = tmp_path / "lib"
    folder.mkdir()
    with pytest.raises(InputError, match="task ID"):
        evil.to_json_file(folder)
    assert not (folder / "../../evil.json").exists() and not (folder / "../../evil").exists()


@pytest.mark.skipif(not TASKS.is_dir(), reason="real CoBRA tasks in ../shared not available")
@pytest.mark.parametrize("name", sorted(Path(p).name for p in glob.glob(str(TASKS / "simple" / "*.json"))))
def test_every_sample_task_round_trips_to_a_new_folder(tmp_path, name):
    task = Task.from_json_file(TASKS / "simple" / name, missing_assets="skip")
    out = task.to_json_file(tmp_path / "copy.json")
    again = Task.from_json_file(out, missing_assets="skip")
    assert again.to_json_data() == task.to_json_data()
    present = [m for m in task.meshes() if m.path.is_file()]
    assert sorted(m.file for m in again.meshes() if m.path.is_file()) == sorted(m.file for m in present)
    for m in again.meshes():
        if m.path.is_file():
            assert tmp_path in m.path.resolve().parents
