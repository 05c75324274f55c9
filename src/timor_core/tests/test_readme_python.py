"""The README's Python blocks run as written: the short example, the branched assembly after it, and the tasks block
on a task with every kind of goal (the user study the README names has only ``at`` goals; the embedded
pick-and-place task has a ``pause`` and a ``returnTo`` goal, which have no pose: the loop as written stopped with an
AttributeError on them). And ``help()`` of the classes they use says how to make and use them."""

from __future__ import annotations

import re

from conftest import REPO

from timor_core.task import Task


def _python_blocks(section: str) -> list[str]:
    text = (REPO / "README.md").read_text()
    body = text.split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", body, flags=re.S)


def test_the_short_example_and_the_branched_assembly_run(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # the second block writes assembly.json
    blocks = _python_blocks("A short example")
    assert len(blocks) == 2
    scope: dict = {}
    for block in blocks:
        exec(compile(block, "README.md", "exec"), scope)
    assert scope["B"].module_ids == ["base", "J2", "eef"]
    assert capsys.readouterr().out.startswith("3 12.625")


def test_the_tasks_block_runs_on_a_task_with_pause_and_return_goals(monkeypatch, capsys):
    (block,) = _python_blocks("Tasks, inverse kinematics and solutions")
    task = Task.from_name("pick_and_place")
    assert {g.type_name for g in task.goals} >= {"at", "pause", "returnTo"}
    block = block.replace('Task.from_json_file("tasks/user_study.json")', 'Task.from_name("pick_and_place")')
    assert "pick_and_place" in block
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in printed] == [g.id for g in task.goals if hasattr(g, "goal_pose")]


def test_help_of_the_main_classes_says_how_to_make_and_use_them():
    """``help(ModulesDB)`` and ``help(ModuleAssembly)`` said one line each; now they name the ways to make one and
    what to do with it, and every method they name exists."""
    from timor_core import ModuleAssembly, ModulesDB

    for cls, needed in (
        (ModulesDB, ("from_json_file", "from_name", "load", "to_json_file")),
        (ModuleAssembly, ("from_serial_modules", "add", "robot", "to_urdf", "to_xacro", "to_srdf", "to_mjcf")),
    ):
        doc = cls.__doc__ or ""
        named = set(re.findall(r"``(?:\w+\.)?(\w+)[(`]", doc))
        named -= {"len", "embedded_db_names", "ModulesDB", "ModuleAssembly", "PinRobot"}  # not methods of the class
        assert set(needed) <= named, (cls, set(needed) - named)
        assert [n for n in named if not hasattr(cls, n)] == [], cls
