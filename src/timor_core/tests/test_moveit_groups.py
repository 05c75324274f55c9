"""Arms on one base in MoveIt (issue 34): one planning group per tool frame, each with its KDL entry, OMPL entry,
end effector and home state; one arm_controller over every arm's joints that takes one arm's trajectory."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest
from branched_set import branched_json

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import AssemblyError
from timor_core.export.formats.moveit_config import moveit_config_data
from timor_core.export.formats.srdf import assembly_to_srdf, planning_chain, planning_groups


def two_arms(db: ModulesDB) -> ModuleAssembly:
    """base3 with an arm (J2, i_45, J1, eef) on its outputs 0 and 2."""
    tree = ModuleAssembly(db, ["base3"])
    for k in (0, 2):
        j = tree.add("J2", (0, f"out_{k}"))
        link = tree.add("i_45", (j, "J2_distal_connector"))
        wrist = tree.add("J1", (link, "i_45_distal_connector"))
        tree.add("eef", (wrist, "J1_distal_connector"))
    return tree


@pytest.fixture(scope="module")
def branched_db(tmp_path_factory) -> ModulesDB:
    path = tmp_path_factory.mktemp("branched") / "modules.json"
    path.write_text(json.dumps(branched_json()))
    return ModulesDB.from_json_file(path)


def test_two_arms_are_two_planning_groups(branched_db):
    assembly = two_arms(branched_db)
    groups = planning_groups(assembly, "b_")
    assert [g for g, _ in groups] == ["manipulator_1", "manipulator_2"]
    assert [c.tip_link for _, c in groups] == ["b_tool0", "b_tool1"]
    assert [c.joints for _, c in groups] == [("b_m1_J2_joint", "b_m3_J1_joint"), ("b_m5_J2_joint", "b_m7_J1_joint")]
    with pytest.raises(AssemblyError, match="serial"):
        planning_chain(assembly)  # one chain cannot hold them
    srdf = ET.fromstring(assembly_to_srdf(assembly, prefix="b_", n_samples=50))
    chains = {g.get("name"): g.find("chain").attrib for g in srdf.findall("group") if g.find("chain") is not None}
    assert chains == {
        "manipulator_1": {"base_link": "b_base_link", "tip_link": "b_tool0"},
        "manipulator_2": {"base_link": "b_base_link", "tip_link": "b_tool1"},
    }
    effectors = {e.get("name"): (e.get("parent_group"), e.get("parent_link")) for e in srdf.findall("end_effector")}
    assert effectors == {
        "manipulator_1_eef": ("manipulator_1", "b_tool0"),
        "manipulator_2_eef": ("manipulator_2", "b_tool1"),
    }
    homes = {s.get("group") for s in srdf.findall("group_state")}
    assert {"manipulator_1", "manipulator_2"} <= homes


def test_two_arms_in_the_moveit_config(branched_db):
    data = moveit_config_data(two_arms(branched_db))
    assert set(data["kinematics.yaml"]) == {"manipulator_1", "manipulator_2"}
    assert all(k["position_only_ik"] for k in data["kinematics.yaml"].values())  # 2 joints each
    assert {"manipulator_1", "manipulator_2"} <= set(data["ompl_planning.yaml"])
    arm = data["ros2_controllers.yaml"]["/**/arm_controller"]["ros__parameters"]
    assert arm["joints"] == ["m1_J2_joint", "m3_J1_joint", "m5_J2_joint", "m7_J1_joint"]
    assert arm["allow_partial_joints_goal"] is True  # MoveIt sends one arm's trajectory
    moveit = data["moveit_controllers.yaml"]["moveit_simple_controller_manager"]["arm_controller"]
    assert moveit["joints"] == arm["joints"]


def test_an_arm_without_a_tool_is_refused(branched_db):
    tree = two_arms(branched_db)
    tree.add("J1", (0, "out_1"))  # a third arm that ends in no tool
    with pytest.raises(AssemblyError, match="lead to no tool"):
        planning_groups(tree)


def test_a_serial_robot_keeps_its_one_group(robco):
    assembly = ModuleAssembly.from_serial_modules(robco, ("base", "J", "L_250", "J", "gripper"))
    assert [g for g, _ in planning_groups(assembly)] == ["manipulator"]
    arm = moveit_config_data(assembly)["ros2_controllers.yaml"]["/**/arm_controller"]["ros__parameters"]
    assert "allow_partial_joints_goal" not in arm
