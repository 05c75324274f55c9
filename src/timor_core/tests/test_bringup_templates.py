"""The launch files of generated bring-up packages are real Python files (hardware/bringup_templates), copied as they
are and filled at launch from the package's bringup.yaml; their arguments go through the one validation of every
launch file (ros/launch_arguments). The files are imported and run here with the real ``launch`` library where
it is installed (make ros); ``ros2 launch`` starts them in src/timor_ros/test/test_bringup_launch.py."""

from __future__ import annotations

import ast
import importlib.util
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from types import ModuleType

import pytest
import yaml

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError, TimorError
from timor_core.hardware.bringup import write_bringup
from timor_core.hardware.bringup_templates import TEMPLATES, template_files
from timor_core.ros.launch_arguments import (
    BRINGUP_ARGUMENTS,
    BringupLaunch,
    LaunchRefusedError,
    check_namespace,
    controller_manager,
    refuse_unknown_arguments,
)

ARM = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
#: an import of the launch files -> the package.xml key of the package that provides it
PROVIDED_BY = {
    "launch": "launch",
    "launch_ros": "launch_ros",
    "ament_index_python": "ament_index_python",
    "yaml": "python3-yaml",
    "timor_core": "timor_core",
    "xacro": "xacro",
}


@pytest.fixture(scope="module")
def packages(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("bringup")
    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    return {route: write_bringup(arm, out, route, name=f"arm_{route}", n_samples=5).folder
            for route in ("mock", "canopen", "gazebo")}  # fmt: skip


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found - set(sys.stdlib_module_names)


def test_the_launch_files_are_the_templates_and_the_data_is_yaml(packages):
    for route, folder in packages.items():
        written = sorted(p.name for p in (folder / "launch").iterdir())
        assert written == sorted([*template_files(route), "bringup.yaml"])
        for name, template in template_files(route).items():
            assert (folder / "launch" / name).read_bytes() == template.read_bytes()
        data = yaml.safe_load((folder / "launch" / "bringup.yaml").read_text())
        assert data["package"] == folder.name and data["robot"] == f"arm_{route}" and data["route"] == route
    assert sorted(p.name for p in TEMPLATES.glob("*.launch.py")) == sorted(f"{n}" for n in BRINGUP_ARGUMENTS)
    canopen = yaml.safe_load((packages["canopen"] / "launch" / "bringup.yaml").read_text())
    assert canopen["xacro_arguments"] == {"can_interface": "can0"}
    assert canopen["route_packages"] == ["canopen_ros2_control"]


def test_the_package_declares_every_import_of_its_launch_files(packages):
    for folder in packages.values():
        depends = {e.text for e in ET.parse(folder / "package.xml").getroot() if e.tag == "exec_depend"}
        for launch in (folder / "launch").glob("*.launch.py"):
            imports = _imports(launch)
            assert imports <= set(PROVIDED_BY), f"{launch.name}: map {imports - set(PROVIDED_BY)} in PROVIDED_BY"
            assert {PROVIDED_BY[m] for m in imports} <= depends, launch.name


def test_arguments_of_each_launch_file(packages):
    control = packages["canopen"] / "launch" / "control.launch.py"
    assert set(BringupLaunch.arguments(control)) == {"namespace", "rviz", "can_interface"}
    assert set(BringupLaunch.arguments(packages["canopen"] / "launch" / "view.launch.py")) == {
        "namespace", "rviz", "joint_state_publisher"}  # fmt: skip
    plan = BringupLaunch.from_arguments(control, {"can_interface": "vcan0", "namespace": "/r1/", "rviz": "on"})
    assert plan.namespace == "r1" and plan.flags == {"rviz": True} and plan.text == {"can_interface": "vcan0"}
    assert plan.route_packages == ("canopen_ros2_control",) and plan.package == "arm_canopen_bringup"
    sim = BringupLaunch.from_arguments(packages["gazebo"] / "launch" / "sim.launch.py", {"gazebo": "false"})
    assert sim.flags == {"gazebo": False} and sim.text == {"world": "empty.sdf"}
    assert controller_manager("r1/arm") == "/r1/arm/controller_manager"
    assert controller_manager("") == "/controller_manager"


@pytest.mark.parametrize(
    ("args", "needle"),
    [({"rviz": "maybe"}, "rviz"), ({"namespace": "1bad/../x"}, "namespace"), ({"rvis": "false"}, "rvis"),
     ({"can_interface": "can\x000"}, "NUL")],
)  # fmt: skip
def test_a_bad_argument_is_an_input_error_naming_it(packages, args, needle):
    with pytest.raises(InputError, match="launch argument") as err:
        BringupLaunch.from_arguments(packages["canopen"] / "launch" / "control.launch.py", args)
    assert needle in str(err.value)


def test_a_missing_or_bad_data_file_is_refused_naming_it(packages, tmp_path):
    launch = tmp_path / "control.launch.py"
    with pytest.raises(InputError, match="bringup.yaml"):
        BringupLaunch.arguments(launch)
    (tmp_path / "bringup.yaml").write_text("package: [unclosed\n")
    with pytest.raises(InputError, match="bringup.yaml"):
        BringupLaunch.arguments(launch)
    (tmp_path / "bringup.yaml").write_text("package: p\nrobot: r\ndistro: kilted\nroute_packages: []\n")
    with pytest.raises(InputError, match="xacro_arguments"):
        BringupLaunch.from_arguments(launch, {})


def test_unknown_command_line_arguments_are_refused_only_for_the_launched_file():
    argv = ["ros2", "launch", "pkg", "control.launch.py", "rvis:=false"]
    with pytest.raises(LaunchRefusedError, match="unknown launch argument 'rvis'.*nothing was started"):
        refuse_unknown_arguments("control.launch.py", ["rviz"], argv)
    refuse_unknown_arguments("view.launch.py", ["rviz"], argv)  # included by another file: its arguments differ
    assert issubclass(LaunchRefusedError, TimorError)
    assert check_namespace(" /a/b_2/ ") == "a/b_2"


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.name.replace(".", "_"), path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_launch_files_import_and_refuse_before_starting_anything(packages):
    """Imported with the real launch library: each declares its arguments; a bad one, or a route driver that is not
    installed, ends ``_launch`` with a LaunchRefusedError before any node exists."""
    pytest.importorskip("launch_ros", reason="the ROS launch library is not installed (make ros)")
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument

    for route, folder in packages.items():
        for name in template_files(route):
            path = folder / "launch" / name
            module = _load(path)
            declared = module.generate_launch_description().entities
            names = {e.name: e.default_value[0].text for e in declared if isinstance(e, DeclareLaunchArgument)}
            assert names == {k: v for k, (v, _) in BringupLaunch.arguments(path).items()}, name
            context = LaunchContext()
            context.launch_configurations.update({**names, "namespace": "9"})
            with pytest.raises(LaunchRefusedError, match=rf"{name}: launch argument 'namespace'"):
                module._launch(context)
    module = _load(packages["canopen"] / "launch" / "control.launch.py")
    context = LaunchContext()
    context.launch_configurations.update({"namespace": "", "rviz": "false", "can_interface": "vcan0"})
    with pytest.raises(LaunchRefusedError, match=r"not installed: .*canopen_ros2_control.*nothing was started"):
        module._launch(context)


def test_every_launch_file_type_checks():
    """mypy over the templates and timor_ros's launch files (a directory crawl gives ``<name>.launch.py`` no module
    name, so they are named one by one, as `make typecheck` does)."""
    pytest.importorskip("mypy", reason="mypy is a test extra")
    import subprocess

    src = Path(__file__).resolve().parents[2]
    files = sorted(TEMPLATES.glob("*.launch.py")) + sorted((src / "timor_ros" / "launch").glob("*.launch.py"))
    config = src / "timor_core" / "pyproject.toml"
    run = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(config), *map(str, files)],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    assert f"in {len(files)} source files" in run.stdout


def test_no_function_over_60_lines_in_the_launch_and_bring_up_code():
    hardware, ros = TEMPLATES.parent, TEMPLATES.parents[1] / "ros"
    files = [*hardware.glob("bringup*.py"), ros / "launch_arguments.py", ros / "robot_description.py",
             *TEMPLATES.glob("*.py")]  # fmt: skip
    functions = [(path.name, node) for path in files for node in ast.walk(ast.parse(path.read_text()))
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]  # fmt: skip
    long = [f"{name} {f.name}: {f.end_lineno - f.lineno + 1}" for name, f in functions if f.end_lineno - f.lineno >= 60]
    assert len(files) >= 9 and not long, long
