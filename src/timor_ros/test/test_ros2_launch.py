"""The launch files under the real `ros2 launch`, and the README's ROS 2 commands under the real `ros2` CLI.

Placeholders (ros-launch kit) stand in for the C++ nodes only so that our own nodes run; they prove nothing about
robot_state_publisher, RViz, MoveIt or ros2_control (the GitHub workflow runs these tests against the real ones).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from ros2_cli import (
    REPO,
    Background,
    Launch,
    echo_latched,
    make_placeholders,
    real_package,
    require_ros2,
    ros2,
    ros2_until_ok,
    wait_for_output,
)
from ros_helpers import start_up, stop, wait_for

README = REPO / "README.md"
READY = "initial assembly: published"  # the assembly node's line once /robot_description is out

pytestmark = pytest.mark.usefixtures("ros2_daemon_stopped")  # nothing of the CLI left running


REAL = all(real_package(p) for p in ("robot_state_publisher", "moveit_ros_move_group", "controller_manager"))


@pytest.fixture(scope="module")
def placeholders(tmp_path_factory) -> Path | None:
    """None where the C++ packages are really installed (the CI container), else a placeholder prefix."""
    require_ros2()
    return None if REAL else make_placeholders(tmp_path_factory.mktemp("placeholders"))


def _readme_block(heading: str) -> list[str]:
    text = README.read_text()
    block = text.split(heading, 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("  #", 1)[0].strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def _launch_args(command: str) -> list[str]:
    return shlex.split(command)[2:]


def _checked(launch: Background) -> int:
    """Stop a launch and assert no process of it is left; its exit code."""
    code = launch.stop()
    left = launch.kill_leftovers()
    assert not left, f"processes left after the launch:\n{left}\n{launch.output()[-3000:]}"
    return code


# -- refused launches --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["search_workers:=two"], "search_workers"),
        (["modules:=base nosuch eef"], "nosuch"),
        (['prefix:=a"/><evil/>'], "prefix"),
        (["namespace:=1bad"], "namespace"),
        (["rviz:=maybe"], "rviz"),
        (["db:=/no/such/modules.json"], "/no/such/modules.json"),
        (["nosuch_argument:=1"], "nosuch_argument"),
    ],
)
def test_a_bad_argument_is_refused_before_anything_starts(placeholders, tmp_path, args, needle):
    launch = Launch(["timor_ros", "assembly.launch.py", *args], tmp_path / "launch.log", placeholders)
    code = launch.wait(120)
    out = launch.output()
    assert code != 0 and "nothing was started" in out and needle in out, out
    assert "process started" not in out, out
    assert not launch.kill_leftovers()


def test_a_missing_package_is_one_error_naming_its_switch(tmp_path):
    """Every package moveit.launch.py would start that is not installed here (rviz2 and move_group with the kits;
    all four on a machine without them) is named in one error with its switch; the installed ones are not."""
    require_ros2()
    switches = {
        "robot_state_publisher": "robot_state_publisher:=false",
        "rviz2": "rviz:=false",
        "moveit_ros_move_group": "move_group:=false",
        "controller_manager": "ros2_control:=false",
    }
    missing = [p for p in switches if not real_package(p)]
    if not missing:
        pytest.skip("every C++ package is installed here: none is missing")
    launch = Launch(["timor_ros", "moveit.launch.py", f"config_dir:={tmp_path / 'cfg'}"], tmp_path / "l.log")
    code = launch.wait(120)
    out = launch.output()
    for package, switch in switches.items():
        assert (f"{package} (leave it out with {switch})" in out) == (package in missing), out
    assert code != 0 and "process started" not in out and not launch.kill_leftovers()
    assert not (tmp_path / "cfg").exists()  # not even the config was written


def test_without_the_cpp_nodes_the_launch_runs_with_their_switches_off(tmp_path):
    """No placeholders: robot_state_publisher:=false rviz:=false runs our nodes alone."""
    require_ros2()
    launch = Launch(
        ["timor_ros", "assembly.launch.py", "robot_state_publisher:=false", "rviz:=false", "search:=false"],
        tmp_path / "l.log",
    )
    try:
        assert wait_for_output(launch, READY), launch.output()
        out = echo_latched("/robot_description")
        assert out.returncode == 0 and "<robot" in out.stdout, out.stderr
    finally:
        _checked(launch)


# -- the README ------------------------------------------------------------------------------------------------


def test_readme_ros2_block(placeholders, tmp_path):
    """Every line of the README's ros2 block, in order: launches and `ros2 run` in the background, the other
    commands against them; what each prints is checked."""
    commands = [c for c in _readme_block("### Launch and the ros2 CLI") if c.startswith("ros2 ")]
    assert len(commands) >= 9
    running: list[tuple[str, Launch]] = []
    try:
        for n, command in enumerate(commands):
            argv = shlex.split(command)
            if argv[1] == "launch" and "--show-args" in argv:
                shown = ros2(*argv[1:])
                assert shown.returncode == 0 and "'search_workers'" in shown.stdout, shown.stdout + shown.stderr
                assert "'robot_state_publisher'" in shown.stdout and "(default: 'true')" in shown.stdout
            elif argv[1] == "launch":
                args = _launch_args(command)
                ns = next((a.split(":=", 1)[1] for a in args if a.startswith("namespace:=")), "")
                if not ns:  # a second system in the root namespace would clash: stop the one running there
                    for key, old in [r for r in running if r[0] == ""]:
                        _checked(old)
                        running.remove((key, old))
                args = [re.sub(r"^config_dir:=.*", f"config_dir:={tmp_path / 'moveit'}", a) for a in args]
                launch = Launch(args, tmp_path / f"launch{n}.log", placeholders)
                running.append((ns, launch))
                assert wait_for_output(launch, READY, 90), launch.output()
                if "moveit.launch.py" in command:
                    assert (tmp_path / "moveit" / "ros2_controllers.yaml").is_file()
                    ready = "You can start planning now" if REAL else "PLACEHOLDER for moveit_ros_move_group/move_group"
                    assert wait_for_output(launch, ready, 120), launch.output()[-3000:]
                    echo = echo_latched("/robot_description")
                    assert "ros2_control" in echo.stdout, echo.stderr
                if ns:
                    topic = f"/{ns}/robot_description"
                    echo = echo_latched(topic)
                    prefix = next(a.split(":=", 1)[1] for a in args if a.startswith("prefix:="))
                    assert f"{prefix}m0" in echo.stdout or f"{prefix}base_link" in echo.stdout, echo.stdout[:500]
            elif argv[1] == "run":
                run = Background(argv[1:], tmp_path / f"run{n}.log")
                try:
                    assert wait_for_output(run, "serving module set", 60), run.output()
                finally:
                    code = _checked(run)
                assert code == 0, run.output()  # Ctrl-C ends the node cleanly
            else:
                result = ros2_until_ok(*argv[1:]) if argv[1] == "param" else ros2(*argv[1:], timeout=120)
                assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-2000:]}"
                _expect(argv[1], result.stdout)
    finally:
        for _, launch in running:
            _checked(launch)


def _expect(verb: str, out: str) -> None:
    """What each README command must print."""
    if verb == "interface":
        assert "string[] modules" in out and "failed_step" in out, out
    elif verb == "topic":
        assert "<robot" in out, out[:500]
    elif verb == "service":
        assert "success=True" in out, out[-1500:]
    elif verb == "param":
        assert "String values are" in out and "gripper" in out, out
    elif verb == "action":
        assert "Feedback:" in out and re.search(r"evaluated: [1-9]", out), out[:3000]
        assert "SUCCEEDED" in out and "applied: true" in out, out[-1500:]


def test_readme_timor_ros_up_block(tmp_path):
    """The README's `timor ros up` lines (without a launch file) start, publish and stop cleanly."""
    require_ros2()
    lines = [c for c in _readme_block("### Without a launch file") if c.startswith(".venv/bin/timor ros up")]
    assert len(lines) == 2
    procs = []
    try:
        for n, line in enumerate(lines):
            args = shlex.split(line)[3:]
            log = tmp_path / f"up{n}.log"
            procs.append((start_up(*args, log=log), log))
            assert wait_for(lambda: "published" in log.read_text(), 60), log.read_text()
        echo = echo_latched("/r2/robot_description")
        assert "r2_" in echo.stdout, echo.stderr
    finally:
        for proc, log in procs:
            assert stop(proc) == 0, log.read_text()


def test_launch_arguments_reach_the_nodes(placeholders, tmp_path, ros_client):
    """One robot in /r1 with the URDF as robot_state_publisher's parameter, ros2_control and a vendor plugin. The
    parameters and the node list are read through rclpy (the README's block runs `ros2 param get` itself; each CLI
    call is a Python process of its own, ~1 s of CPU)."""
    from rcl_interfaces.srv import GetParameters
    from rclpy.parameter import parameter_value_to_python

    args = ["namespace:=r1", "prefix:=r1_", "description_from_topic:=false", "ros2_control:=true", "rviz:=false",
            "ros2_control_plugin:=my_hw/System", "joint_state_publisher:=false", "search_workers:=2"]  # fmt: skip
    launch = Launch(["timor_ros", "assembly.launch.py", *args], tmp_path / "l.log", placeholders)
    try:
        assert wait_for_output(launch, READY, 90), launch.output()

        def param(node: str, name: str):
            request = GetParameters.Request(names=[name])
            got = ros_client.call(GetParameters, f"{node}/get_parameters", request, timeout=30)
            return parameter_value_to_python(got.values[0])

        assert param("/r1/assembly", "ros2_control") is True
        assert param("/r1/assembly", "ros2_control_plugin") == "my_hw/System"
        assert param("/r1/assembly", "robot_state_publisher_node") == "robot_state_publisher"
        description = param("/r1/robot_state_publisher", "robot_description")
        assert "r1_m0" in description or "r1_base_link" in description, description[:500]
        assert param("/r1/search", "workers") == 2
        description = echo_latched("/r1/robot_description").stdout
        assert "<ros2_control" in description and "my_hw/System" in description
        expected = {"/r1/assembly", "/r1/modules_db", "/r1/search", "/r1/robot_state_publisher"}
        nodes: list[str] = []

        def all_listed() -> bool:  # discovery finds the nodes one by one: ask until all are there
            names = ros_client.node.get_node_names_and_namespaces()
            nodes[:] = [f"{ns.rstrip('/')}/{name}" for name, ns in names]
            return expected <= set(nodes)

        assert wait_for(all_listed, 45, interval=0.1), nodes
        assert not any("joint_state_publisher" in n for n in nodes if n.startswith("/r1/")), nodes
    finally:
        _checked(launch)
