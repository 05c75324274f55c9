"""The launch files, run against stub ``launch``/``launch_ros`` modules (no ROS launch install needed).

Each launch file is imported with minimal stand-ins injected into ``sys.modules`` (the real packages, if any,
are hidden for the duration of the test), ``generate_launch_description()`` is called, and its
``OpaqueFunction``s are run with a fake launch context; the test then checks the nodes they produce.
test_launch_smoke.py covers the real launch system where it is installed.
"""

from __future__ import annotations

import importlib.util
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

LAUNCH_DIR = Path(__file__).resolve().parents[1] / "launch"


class _Recorded:
    """Records its positional and keyword arguments."""

    def __init__(self, *args, **kwargs):
        self.args = args
        self.kwargs = kwargs


class LaunchDescription(_Recorded):
    @property
    def entities(self) -> list:
        return list(self.args[0]) if self.args else []


class DeclareLaunchArgument(_Recorded):
    @property
    def name(self) -> str:
        return self.args[0]


class OpaqueFunction(_Recorded):
    pass


class IncludeLaunchDescription(_Recorded):
    pass


class PythonLaunchDescriptionSource(_Recorded):
    pass


class LaunchConfiguration(_Recorded):
    def perform(self, context) -> str:
        return context.launch_configurations[self.args[0]]


class IfCondition(_Recorded):
    pass


class UnlessCondition(_Recorded):
    pass


class Node(_Recorded):
    pass


class FindPackageShare(_Recorded):
    pass


class FakeContext:
    def __init__(self, launch_configurations: dict[str, str]):
        self.launch_configurations = dict(launch_configurations)


def _stub_modules() -> dict[str, types.ModuleType]:
    layout = {
        "launch": {"LaunchDescription": LaunchDescription},
        "launch.actions": {
            "DeclareLaunchArgument": DeclareLaunchArgument,
            "OpaqueFunction": OpaqueFunction,
            "IncludeLaunchDescription": IncludeLaunchDescription,
        },
        "launch.conditions": {"IfCondition": IfCondition, "UnlessCondition": UnlessCondition},
        "launch.substitutions": {"LaunchConfiguration": LaunchConfiguration},
        "launch.launch_description_sources": {"PythonLaunchDescriptionSource": PythonLaunchDescriptionSource},
        "launch_ros": {},
        "launch_ros.actions": {"Node": Node},
        "launch_ros.substitutions": {"FindPackageShare": FindPackageShare},
    }
    modules = {}
    for name, attrs in layout.items():
        module = types.ModuleType(name)
        module.__dict__.update(attrs)
        modules[name] = module
    for name, module in modules.items():
        if "." in name:
            parent, child = name.rsplit(".", 1)
            setattr(modules[parent], child, module)
    return modules


@pytest.fixture
def load_launch(monkeypatch):
    """Import a launch file of timor_ros with the stub launch modules."""
    for name, module in _stub_modules().items():
        monkeypatch.setitem(sys.modules, name, module)

    def load(file_name: str) -> types.ModuleType:
        spec = importlib.util.spec_from_file_location("_timor_" + file_name.replace(".", "_"), LAUNCH_DIR / file_name)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


def _declared(description: LaunchDescription) -> dict[str, str]:
    return {e.name: e.kwargs["default_value"] for e in description.entities if isinstance(e, DeclareLaunchArgument)}


def _run(description: LaunchDescription, **overrides: str) -> list:
    """Every entity the launch description produces, its OpaqueFunctions run with defaults + ``overrides``."""
    context = FakeContext({**_declared(description), **overrides})
    produced = []
    for entity in description.entities:
        if isinstance(entity, OpaqueFunction):
            produced.extend(entity.kwargs["function"](context))
        elif not isinstance(entity, DeclareLaunchArgument):
            produced.append(entity)
    return produced


def _nodes(entities: list, executable: str) -> list[Node]:
    return [e for e in entities if isinstance(e, Node) and e.kwargs.get("executable") == executable]


def _params(node: Node) -> dict:
    merged = {}
    for p in node.kwargs["parameters"]:
        merged.update(p)
    return merged


def test_assembly_launch(load_launch):
    description = load_launch("assembly.launch.py").generate_launch_description()
    declared = _declared(description)
    assert set(declared) == {
        "db",
        "modules",
        "prefix",
        "rviz",
        "gui",
        "joint_state_publisher",
        "ros2_control",
        "ros2_control_plugin",
        "description_from_topic",
        "search",
        "search_workers",
        "namespace",
    }
    assert declared["ros2_control"] == "false" and declared["joint_state_publisher"] == "true"
    assert declared["ros2_control_plugin"] == "mock_components/GenericSystem"

    entities = _run(description)
    (assembly,) = _nodes(entities, "assembly")
    params = _params(assembly)
    assert params["ros2_control"] is False and params["ros2_control_plugin"] == "mock_components/GenericSystem"
    assert params["robot_state_publisher_node"] == "" and params["initial_assembly"] == declared["modules"].split()
    (rsp,) = _nodes(entities, "robot_state_publisher")
    assert _params(rsp) == {"description_from_topic": True}
    assert len(_nodes(entities, "joint_state_publisher")) == 1 and not _nodes(entities, "joint_state_publisher_gui")
    (rviz,) = _nodes(entities, "rviz2")
    assert isinstance(rviz.kwargs["condition"], IfCondition)
    (search,) = _nodes(entities, "search")
    assert search.kwargs["name"] == "search" and _params(search) == {"workers": 1}
    assert not _nodes(_run(description, search="false"), "search")
    # one robot per namespace: every node of the launch goes there (RViz through a substitution)
    assert all(n.kwargs["namespace"] == "" for n in entities if n.kwargs.get("executable") != "rviz2")
    namespaced = _run(description, namespace="r1", prefix="r1_")
    assert {
        n.kwargs["executable"]: n.kwargs["namespace"] for n in namespaced if n.kwargs.get("executable") != "rviz2"
    } == {
        "modules_db": "r1",
        "assembly": "r1",
        "robot_state_publisher": "r1",
        "joint_state_publisher": "r1",
        "search": "r1",
    }
    assert "namespace" in rviz.kwargs
    assert _params(_nodes(_run(description, search_workers="2"), "search")[0]) == {"workers": 2}

    entities = _run(description, gui="true")
    assert len(_nodes(entities, "joint_state_publisher_gui")) == 1 and not _nodes(entities, "joint_state_publisher")

    entities = _run(description, ros2_control="true", ros2_control_plugin="my_hw/System", joint_state_publisher="false")
    params = _params(_nodes(entities, "assembly")[0])
    assert params["ros2_control"] is True and params["ros2_control_plugin"] == "my_hw/System"
    assert not _nodes(entities, "joint_state_publisher") and not _nodes(entities, "joint_state_publisher_gui")


def test_assembly_launch_description_as_parameter(load_launch):
    description = load_launch("assembly.launch.py").generate_launch_description()
    entities = _run(description, description_from_topic="false", prefix="r1_")
    assert _params(_nodes(entities, "assembly")[0])["robot_state_publisher_node"] == "robot_state_publisher"
    rsp = _params(_nodes(entities, "robot_state_publisher")[0])
    assert "description_from_topic" not in rsp
    assert ET.fromstring(rsp["robot_description"]).find("joint").get("name").startswith("r1_")


def test_moveit_launch(load_launch, tmp_path):
    description = load_launch("moveit.launch.py").generate_launch_description()
    declared = _declared(description)
    assert set(declared) == {"db", "modules", "prefix", "config_dir", "rviz", "ros2_control", "ros2_control_plugin"}
    assert declared["ros2_control"] == "true" and declared["rviz"] == "true"

    out = tmp_path / "cfg"
    entities = _run(description, config_dir=str(out), prefix="p_", rviz="false")
    (include,) = [e for e in entities if isinstance(e, IncludeLaunchDescription)]
    forwarded = dict(include.kwargs["launch_arguments"])
    assert forwarded["ros2_control"] == "true" and forwarded["joint_state_publisher"] == "false"
    assert forwarded["rviz"] == "false" and forwarded["prefix"] == "p_"
    assert include.args[0].args[0][1] == "/launch/assembly.launch.py"

    (move_group,) = _nodes(entities, "move_group")
    params = _params(move_group)
    srdf = next(out.glob("*.srdf")).read_text()
    assert params["robot_description_semantic"] == srdf
    assert params["robot_description"] == next(out.glob("*.urdf")).read_text()
    assert params["planning_pipelines"] == ["ompl"] and params["ompl"]["planning_plugins"]
    assert params["robot_description_kinematics"]["manipulator"]["kinematics_solver"]
    assert "cartesian_limits" in params["robot_description_planning"]
    assert (out / "ompl_planning.yaml").is_file()

    (control,) = _nodes(entities, "ros2_control_node")
    assert control.kwargs["package"] == "controller_manager"
    assert control.kwargs["parameters"] == [str(out / "ros2_controllers.yaml")]
    assert ("~/robot_description", "robot_description") in control.kwargs["remappings"]
    spawned = {n.kwargs["arguments"][0]: n.kwargs for n in _nodes(entities, "spawner")}
    assert set(spawned) == {"joint_state_broadcaster", "arm_controller"}
    for kwargs in spawned.values():
        assert kwargs["package"] == "controller_manager"
        assert kwargs["arguments"][1:] == ["--controller-manager", "/controller_manager"]
    assert params["moveit_simple_controller_manager"]["controller_names"] == ["arm_controller"]

    # what the include hands to assembly.launch.py: a URDF with <ros2_control>, no joint_state_publisher
    assembly_launch = load_launch("assembly.launch.py").generate_launch_description()
    base = _run(assembly_launch, **forwarded)
    assert _params(_nodes(base, "assembly")[0])["ros2_control"] is True
    assert not _nodes(base, "joint_state_publisher") and not _nodes(base, "joint_state_publisher_gui")


def test_moveit_launch_without_ros2_control(load_launch, tmp_path):
    description = load_launch("moveit.launch.py").generate_launch_description()
    entities = _run(description, config_dir=str(tmp_path), ros2_control="false")
    (include,) = [e for e in entities if isinstance(e, IncludeLaunchDescription)]
    forwarded = dict(include.kwargs["launch_arguments"])
    assert forwarded["ros2_control"] == "false" and forwarded["joint_state_publisher"] == "true"
    assert not _nodes(entities, "ros2_control_node") and not _nodes(entities, "spawner")
    assert len(_nodes(entities, "move_group")) == 1
