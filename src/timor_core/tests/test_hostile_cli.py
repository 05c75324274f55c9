"""Hostile input through the CLI (issue 12): each refused cleanly, nothing written, nothing changed.

Each case runs ``timor ...`` in a child process under a memory cap and a timeout: exit code != 0, one last
``error:`` line naming the file, option or value, no traceback, inputs untouched, no temp files left.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hostile import assert_clean_error, run_cli, run_cli_here

GPM = "geometric_primitive_modules"
POSE = [[1, 0, 0, 0.3], [0, 1, 0, 0], [0, 0, 1, 0.5], [0, 0, 0, 1]]
ROBOT = ["base", "J2", "i_45", "J2", "J2", "eef"]


def _deep(n: int = 100_000) -> str:
    return "[" * n + "]" * n


def _no_temp_files(folder: Path) -> None:
    leftovers = [p for p in folder.rglob("*") if p.name.endswith(".tmp") or p.name.startswith(".") and "tmp" in p.name]
    assert not leftovers, leftovers


@pytest.fixture()
def task_file(tmp_path) -> Path:
    path = tmp_path / "task.json"
    pose = [[1, 0, 0, 0.3], [0, 1, 0, 0.0], [0, 0, 1, 0.6], [0, 0, 0, 1]]
    path.write_text(
        json.dumps({"header": {"ID": "t"}, "goals": [{"ID": "g", "type": "at", "goalPose": {"nominal": pose}}]})
    )
    return path


@pytest.mark.parametrize(
    "args_of",
    [
        lambda p: ["db", "validate", "/dev/zero"],
        lambda p: ["db", "info", "/dev/zero"],
        lambda p: ["db", "validate", str(p / "deep.json")],
        lambda p: ["db", "info", str(p / "deep.json")],
        lambda p: ["task", "validate", str(p / "deep.json")],
        lambda p: ["task", "info", str(p / "deep.json")],
        lambda p: ["task", "info", "/dev/zero"],
        lambda p: ["solve", str(p / "deep.json"), "--db", GPM, "--modules", *ROBOT],
        lambda p: ["result", "show", str(p / "deep.json")],
        lambda p: ["db", "info", str(p)],  # a folder without modules.json
    ],
    ids=[
        "db-validate-dev-zero",
        "db-info-dev-zero",
        "db-validate-deep",
        "db-info-deep",
        "task-validate-deep",
        "task-info-deep",
        "task-info-dev-zero",
        "solve-deep-task",
        "result-show-deep",
        "db-info-empty-folder",
    ],
)
def test_unbounded_or_deep_inputs_are_refused(tmp_path, monkeypatch, capsys, args_of, request):
    """``db validate`` of /dev/zero and of the deep file in a child process as a user runs them (its memory cap, its
    interpreter's recursion limit), the other commands in this process (in tmp_path too; under ``memory_cap``, and an
    uncaught exception fails the test)."""
    (tmp_path / "deep.json").write_text(_deep())
    monkeypatch.chdir(tmp_path)
    child = request.node.callspec.id in ("db-validate-dev-zero", "db-validate-deep")
    args = args_of(tmp_path)
    proc = run_cli(args, cwd=tmp_path, timeout=60) if child else run_cli_here(capsys, args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr and "RecursionError" not in proc.stderr, proc.stderr[-2000:]
    assert proc.stderr.strip(), "a refusal must say why"


def test_prefix_injection_is_refused_by_every_exporter(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    evil = 'a"/><evil/><x y="'
    for cmd in (["urdf", GPM, *ROBOT], ["xacro", "--db", GPM, "--modules", *ROBOT], ["srdf", GPM, *ROBOT]):
        args = [*cmd, "--prefix", evil, "-o", str(tmp_path / "out.xml")]
        proc = run_cli(args, cwd=tmp_path) if cmd[0] == "urdf" else run_cli_here(capsys, args)  # one child suffices
        assert_clean_error(proc, "prefix")
        assert not (tmp_path / "out.xml").exists()


def test_names_never_become_paths(tmp_path):
    out = tmp_path / "a" / "b" / "cfg"
    proc = run_cli(
        ["moveit-config", "--db", GPM, "--modules", *ROBOT, "--name", "../../../evil", "-o", str(out)], cwd=tmp_path
    )
    assert_clean_error(proc, "name")
    assert not list(tmp_path.rglob("evil*"))


@pytest.mark.parametrize(
    "extra,needle",
    [
        (["--seed=-1"], "seed"),
        (["--seed", "1.5"], "seed"),
    ],
)
def test_bad_numbers_on_solve(task_file, monkeypatch, capsys, extra, needle):
    """The first case in a child process as a user runs it, the other in this process (in the task's folder too)."""
    monkeypatch.chdir(task_file.parent)
    args = ["solve", str(task_file), "--db", GPM, "--modules", *ROBOT, *extra]
    proc = run_cli(args, cwd=task_file.parent) if extra == ["--seed=-1"] else run_cli_here(capsys, args)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert needle in proc.stderr


def test_scheduler_address_is_checked_before_dask_starts(task_file):
    proc = run_cli(
        ["search", str(task_file), "--db", GPM, "--scheduler", "tcp://localhost:notaport", "--no-progress"],
        cwd=task_file.parent,
        timeout=60,
    )
    assert_clean_error(proc, "notaport")


def test_budget_seconds_must_be_positive(task_file, monkeypatch, capsys):
    """In this process (the task's folder the working directory): test_scheduler_address_is_checked_before_dask_starts
    runs ``timor search``'s refusals in a child process."""
    monkeypatch.chdir(task_file.parent)
    proc = run_cli_here(capsys, ["search", str(task_file), "--db", GPM, "--budget-seconds", "-1"])
    assert proc.returncode != 0 and "Traceback" not in proc.stderr


@pytest.mark.filterwarnings("ignore:overflow encountered in matmul:RuntimeWarning")  # stderr in a child
def test_fk_never_prints_nan(tmp_path, monkeypatch, capsys):
    """In this process (in tmp_path): test_negative_joint_values_and_both_robot_forms runs ``timor fk`` in a child."""
    monkeypatch.chdir(tmp_path)
    proc = run_cli_here(capsys, ["fk", GPM, *ROBOT, "--q", "1e308,1e308,1e308"])
    assert "NaN" not in proc.stdout and "Infinity" not in proc.stdout
    if proc.returncode != 0:
        assert_clean_error(proc)


def test_output_onto_a_special_file_is_refused_without_temp_names(tmp_path, monkeypatch, capsys):
    """In this process (in tmp_path): test_overwrite_keeps_mode_and_writes_through_symlinks writes with ``timor urdf``
    in a child."""
    monkeypatch.chdir(tmp_path)
    proc = run_cli_here(capsys, ["urdf", GPM, *ROBOT, "-o", "/proc/version"])
    line = assert_clean_error(proc, "/proc/version")
    assert ".tmp" not in line


def test_overwrite_keeps_mode_and_writes_through_symlinks(tmp_path):
    target = tmp_path / "robot.urdf"
    target.write_text("old")
    os.chmod(target, 0o644)
    assert run_cli(["urdf", GPM, *ROBOT, "-o", str(target)], cwd=tmp_path).returncode == 0
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    link = tmp_path / "link.urdf"
    link.symlink_to(target)
    assert run_cli(["urdf", GPM, *ROBOT, "--prefix", "p_", "-o", str(link)], cwd=tmp_path).returncode == 0
    assert link.is_symlink() and "p_base_link" in target.read_text()
    _no_temp_files(tmp_path)


def test_solution_must_not_overwrite_the_task(task_file, monkeypatch, capsys):
    """In this process (in the task's folder): test_json_output_has_no_nan_or_infinity runs ``timor solve`` in a
    child."""
    before = task_file.read_bytes()
    monkeypatch.chdir(task_file.parent)
    proc = run_cli_here(
        capsys, ["solve", str(task_file), "--db", GPM, "--modules", *ROBOT, "--solution", str(task_file)]
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert task_file.read_bytes() == before


def test_moveit_config_checks_every_target_first(tmp_path, monkeypatch, capsys):
    """In this process (in tmp_path): test_names_never_become_paths runs ``timor moveit-config`` in a child."""
    out = tmp_path / "cfg"
    (out / "joint_limits.yaml").mkdir(parents=True)
    monkeypatch.chdir(tmp_path)
    proc = run_cli_here(capsys, ["moveit-config", "--db", GPM, "--modules", *ROBOT, "-o", str(out)])
    line = assert_clean_error(proc, "joint_limits.yaml")
    assert ".tmp" not in line
    assert sorted(p.name for p in out.iterdir()) == ["joint_limits.yaml"]


def test_video_refuses_negative_fps(tmp_path):
    proc = run_cli(
        ["video", "--db", GPM, "--modules", *ROBOT, "--fps=-5", "-o", str(tmp_path / "v.mp4")], cwd=tmp_path, timeout=60
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr and "Broken pipe" not in proc.stderr
    assert "fps" in proc.stderr
    assert not (tmp_path / "v.mp4").exists()


def test_huge_integer_is_not_blamed_on_nan(tmp_path, monkeypatch, capsys):
    """In this process (in tmp_path): test_unbounded_or_deep_inputs_are_refused runs ``db validate`` in a child."""
    path = tmp_path / "modules.json"
    text = json.dumps({"modules": []}).replace("[]", "[" + "1" * 5001 + "]")
    path.write_text(text)
    monkeypatch.chdir(tmp_path)
    proc = run_cli_here(capsys, ["db", "validate", str(path)])
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    assert "NaN" not in proc.stderr and "Infinity" not in proc.stderr


def test_duplicate_keys_are_refused(tmp_path, monkeypatch, capsys):
    """In this process (in tmp_path): test_unbounded_or_deep_inputs_are_refused runs ``db validate`` in a child."""
    path = tmp_path / "modules.json"
    path.write_text('{"modules": [], "modules": []}')
    monkeypatch.chdir(tmp_path)
    proc = run_cli_here(capsys, ["db", "validate", str(path)])
    assert proc.returncode != 0 and "duplicate" in proc.stderr.lower()


def test_long_mesh_file_name_is_a_clean_error(tmp_path):
    from conftest import primitives_json, write_db

    data = primitives_json()
    eye = [[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
    data["modules"][0]["bodies"][0]["collision"] = [
        {"type": "mesh", "parameters": {"file": "x" * 300 + ".stl"}, "pose": eye}
    ]
    path = write_db(tmp_path, data)
    proc = run_cli(["db", "info", str(path)], cwd=tmp_path)
    assert_clean_error(proc, "parameters.file")
    assert "OSError" not in proc.stderr


@pytest.mark.parametrize(
    "goals,constraints,needle",
    [
        (
            [
                {
                    "ID": "g",
                    "type": "at",
                    "goalPose": {
                        "nominal": [[1, 0, 0, 0.3], [0, 1, 0, 0], [0, 0, 1, 0.5], [0, 0, 0, 1]],
                        "toleranceProjection": ["x", "x"],
                        "tolerance": [[-0.1, -0.05], [0.05, 0.1]],
                    },
                }
            ],
            [],
            "x",
        ),
        ([{"ID": "f", "type": "follow", "trajectory": []}], [], "trajectory"),
        ([{"ID": "r", "type": "returnTo", "returnToGoal": "nosuch"}], [], "nosuch"),
    ],
    ids=["tolerance-disjoint", "follow-empty", "return-to-unknown"],
)
def test_task_validate_is_not_valid_too_early(tmp_path, monkeypatch, capsys, goals, constraints, needle):
    """The first case in a child process as a user runs it, the others in this process (in tmp_path too)."""
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"header": {"ID": "t"}, "goals": goals, "constraints": constraints}))
    monkeypatch.chdir(tmp_path)
    args = ["task", "validate", str(path)]
    proc = run_cli(args, cwd=tmp_path) if needle == "x" else run_cli_here(capsys, args)
    assert proc.returncode == 1, proc.stdout
    assert needle in proc.stderr and "Traceback" not in proc.stderr


def test_negative_joint_values_and_both_robot_forms(tmp_path, monkeypatch, capsys):
    """The first command in a child process as a user runs it, the others in this process (in tmp_path too)."""
    monkeypatch.chdir(tmp_path)
    for args in (
        ["fk", GPM, *ROBOT, "--q", "-0.1,0.2,-0.3"],
        ["fk", "--db", GPM, "--modules", *ROBOT, "--q=-0.1,0.2,-0.3"],
    ):
        proc = run_cli(args, cwd=tmp_path) if args[1] == GPM else run_cli_here(capsys, args)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["tcp"][3] == [0.0, 0.0, 0.0, 1.0]
    assert_clean_error(run_cli_here(capsys, ["fk", GPM, *ROBOT, "--db", GPM]), "not both")
    assert_clean_error(run_cli_here(capsys, ["fk"]), "robot is missing")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["view", "robot", "--db", GPM, "--modules", *ROBOT, "--port", "70000"], "port"),
        (["video", "--db", GPM, "--modules", *ROBOT, "--fps", "nan", "-o", "v.mp4"], "fps"),
        (["video", "--db", GPM, "--modules", *ROBOT, "--fps", "1e400", "-o", "v.mp4"], "fps"),
        (["moveit-config", "--db", GPM, "--modules", *ROBOT, "--seed", "-3", "-o", "cfg"], "seed"),
        (["search", "t.json", "--db", GPM, "--workers", "0"], "workers"),
        (["search", "t.json", "--db", GPM, "--budget-evals", "9" * 5001], "budget-evals"),
        (["paper", "exp2", "--task", "t.json", "--generations", "-1"], "generations"),
    ],
)
def test_numeric_options_are_checked_by_the_parser(tmp_path, monkeypatch, capsys, args, needle):
    """The first case in a child process as a user runs it, the others in this process (in tmp_path too)."""
    monkeypatch.chdir(tmp_path)
    proc = run_cli(args, cwd=tmp_path, timeout=60) if args[0] == "view" else run_cli_here(capsys, args)
    assert_clean_error(proc, needle)
    assert not list(tmp_path.iterdir())


def test_an_internal_error_is_one_line_and_exit_3(tmp_path):
    code = (
        "import sys, timor_core.cli.app as c\n"
        "def boom(args):\n    raise RuntimeError('a bug')\n"
        "c._cmd_db_info = boom\n"
        "sys.exit(c.main(['db', 'info', 'geometric_primitive_modules']))\n"
    )
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: internal error: RuntimeError: a bug")


@pytest.mark.parametrize(
    "args, needle",
    [
        (["urdf", GPM, *ROBOT, "--name", "../x"], "argument --name"),
        (["urdf", GPM, *ROBOT, "--package", "a b"], "argument --package"),
        (["srdf", GPM, *ROBOT, "--group", "g/h"], "argument --group"),
        (["urdf", GPM, *ROBOT, "--plugin", 'a"><b'], "plugin"),
        (["search", "t.json", "--db", GPM, "--workers", "100000000"], "argument --workers"),
        (["db", "sheet", "robco_like", "--cols", "100000", "-o", "x.png"], "argument --cols"),
        (["paper", "exp2", "--task", "t.json", "-o", "afile"], "not a folder"),
        (["demo", "--out", "afile"], "not a folder"),
        (["moveit-config", GPM, *ROBOT, "-o", "afile"], "not a folder"),
    ],
)
def test_names_counts_and_output_folders_are_checked_first(tmp_path, monkeypatch, capsys, args, needle):
    """The first case in a child process as a user runs it, the others in this process (in tmp_path too)."""
    (tmp_path / "afile").write_text("the user's")
    monkeypatch.chdir(tmp_path)
    proc = run_cli(args, cwd=tmp_path, timeout=60) if "../x" in args else run_cli_here(capsys, args)
    assert_clean_error(proc, needle)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    assert (tmp_path / "afile").read_text() == "the user's"


def test_json_output_has_no_nan_or_infinity(tmp_path):
    pose = [[1, 0, 0, 5.0], [0, 1, 0, 0], [0, 0, 1, 0.5], [0, 0, 0, 1]]  # out of reach: no cost, no q
    task = tmp_path / "t.json"
    task.write_text(
        json.dumps({"header": {"ID": "t"}, "goals": [{"ID": "far", "type": "at", "goalPose": {"nominal": pose}}]})
    )
    proc = run_cli(["solve", str(task), "--db", GPM, "--modules", *ROBOT, "--json"], cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the JSON output"))


def test_a_reader_that_goes_away_is_not_an_error():
    """`timor db info SET | head -1`: the closed pipe ends the command quietly (exit 141, like Unix tools)."""
    import subprocess
    import sys

    timor = Path(sys.executable).with_name("timor")
    proc = subprocess.Popen(
        [str(timor), "db", "info", "geometric_primitive_modules"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) in (0, 141)  # 0 if it wrote everything before the pipe closed
    assert first.startswith(b"module set 'geometric_primitive_modules'")
    assert b"Traceback" not in err and b"error" not in err
