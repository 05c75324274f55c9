"""timor_core.ros.plugin_index: the library pluginlib would load for a class, from ament index trees written
here (the layouts pluginlib reads: ``<library>`` and ``<class_libraries>`` descriptions, shadowing prefixes) and,
where ../shared/ros-cpp is installed, from the real index of ros2_control's controllers and mock hardware."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from timor_core.ros.plugin_index import ament_prefixes, plugin_libraries


def _package(prefix: Path, base: str, package: str, xml_name: str, xml: str, libraries: list[str]) -> None:
    index = prefix / "share" / "ament_index" / "resource_index" / f"{base}__pluginlib__plugin"
    index.mkdir(parents=True, exist_ok=True)
    (index / package).write_text(f"share/{package}/{xml_name}\n")
    (prefix / "share" / package).mkdir(parents=True, exist_ok=True)
    (prefix / "share" / package / xml_name).write_text(xml)
    (prefix / "lib").mkdir(exist_ok=True)
    for name in libraries:
        (prefix / "lib" / f"lib{name}.so").write_bytes(b"\x7fELF")


def test_classes_map_to_their_libraries_in_the_order_asked(tmp_path):
    jtc = '<library path="jtc"><class name="jtc/Controller" type="jtc::Controller"/></library>'
    _package(tmp_path, "controller_interface", "jtc", "p.xml", jtc, ["jtc"])
    hw = (
        '<class_libraries><library path="mock"><class name="mock/A"/><class type="mock::B"/></library>'
        '<library path="other"><class name="other/C"/></library></class_libraries>'
    )
    _package(tmp_path, "hardware_interface", "hw", "hw.xml", hw, ["mock", "other"])
    lib = tmp_path / "lib"
    got = plugin_libraries(["mock/A", "jtc/Controller", "mock::B", "other/C", "mock/A"], [tmp_path])
    assert got == [lib / "libmock.so", lib / "libjtc.so", lib / "libother.so"]


def test_unknown_classes_missing_files_and_broken_descriptions_are_left_out(tmp_path):
    _package(tmp_path, "controller_interface", "gone", "p.xml",
             '<library path="gone"><class name="gone/X"/></library>', [])  # fmt: skip
    _package(tmp_path, "controller_interface", "broken", "p.xml", "<library path=", [])
    index = tmp_path / "share" / "ament_index" / "resource_index" / "controller_interface__pluginlib__plugin"
    (index / "nowhere").write_text("share/nowhere/missing.xml\n")
    (index / "unreadable").mkdir()  # reading it raises IsADirectoryError
    assert plugin_libraries(["gone/X", "nope/Y"], [tmp_path]) == []
    assert plugin_libraries(["gone/X"], [tmp_path / "no_such_prefix"]) == []


def test_the_first_prefix_listing_a_package_shadows_the_later_ones(tmp_path):
    first, second = tmp_path / "overlay", tmp_path / "underlay"
    for prefix in (first, second):
        _package(prefix, "controller_interface", "jtc", "p.xml",
                 '<library path="jtc"><class name="jtc/Controller"/></library>', ["jtc"])  # fmt: skip
    assert plugin_libraries(["jtc/Controller"], [first, second]) == [first / "lib" / "libjtc.so"]
    assert plugin_libraries(["jtc/Controller"], [second, first]) == [second / "lib" / "libjtc.so"]


def test_the_prefixes_come_from_ament_prefix_path(tmp_path, monkeypatch):
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(tmp_path / "a"), "", str(tmp_path / "b")]))
    assert ament_prefixes() == [tmp_path / "a", tmp_path / "b"]


_REAL = [p for p in ament_prefixes() if (p / "lib" / "libjoint_trajectory_controller.so").is_file()]


@pytest.mark.skipif(not _REAL, reason="ros2_control's controllers are not installed (make ros, ../shared/ros-cpp)")
def test_the_real_index_names_ros2_controls_libraries():
    classes = ["joint_state_broadcaster/JointStateBroadcaster", "joint_trajectory_controller/JointTrajectoryController",
               "mock_components/GenericSystem"]  # fmt: skip
    got = plugin_libraries(classes)
    assert [p.name for p in got] == ["libjoint_state_broadcaster.so", "libjoint_trajectory_controller.so",
                                     "libmock_components.so"]  # fmt: skip
    assert all(p.is_file() for p in got)
