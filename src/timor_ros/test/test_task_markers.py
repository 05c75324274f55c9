"""The task_markers node (assembly.launch.py task:=) as its own process: the task's markers as one latched
MarkerArray in the frame it is given, and a bad task refused at start with the parameter named."""

from __future__ import annotations

import threading

from ros2_cli import Background, require_ros2, wait_for_output
from visualization_msgs.msg import Marker, MarkerArray

from timor_core.task.task import Task
from timor_core.viz.rviz_markers import task_markers
from timor_ros.common import LATCHED


def test_the_node_publishes_the_task_as_one_latched_marker_array(ros_client, tmp_path):
    require_ros2()
    args = ["run", "timor_ros", "task_markers", "--ros-args", "-r", "__ns:=/tm", "-p", "task:=pick_and_place",
            "-p", "frame_id:=r9_base_link"]  # fmt: skip
    node = Background(args, tmp_path / "node.log")
    try:
        assert wait_for_output(node, "markers in frame r9_base_link", 60), node.output()
        got: list[MarkerArray] = []
        arrived = threading.Event()

        def on_markers(msg: MarkerArray) -> None:
            got.append(msg)
            arrived.set()

        # subscribed after the node published: the latched message still arrives
        sub = ros_client.node.create_subscription(MarkerArray, "/tm/task_markers", on_markers, LATCHED)
        try:
            assert arrived.wait(30), "no MarkerArray on /tm/task_markers"
        finally:
            ros_client.node.destroy_subscription(sub)
    finally:
        code = node.stop()  # SIGINT to `ros2 run` and its node, as Ctrl-C
        assert not node.kill_leftovers()
    assert code == 0, node.output()
    expected = task_markers(Task.from_name("pick_and_place"))
    markers = got[0].markers
    assert [(m.ns, m.id, m.type) for m in markers] == [(e.ns, e.id, e.type) for e in expected]
    assert {m.header.frame_id for m in markers} == {"r9_base_link"} and {m.action for m in markers} == {Marker.ADD}
    crate = markers[0]
    assert (crate.pose.position.x, crate.pose.position.y, crate.pose.position.z) == (0.3, 0.3, 0.1)
    assert [m.text for m in markers if m.type == Marker.TEXT_VIEW_FACING] == ["pick", "place", "base"]


def test_a_bad_task_ends_the_node_naming_the_parameter(tmp_path):
    require_ros2()
    missing = "no_such_task.json"  # short: the node shortens a long value (a deep tmp_path) in its message
    node = Background(["run", "timor_ros", "task_markers", "--ros-args", "-p", f"task:={missing}"], tmp_path / "n.log")
    code = node.wait(60)
    assert code == 2, node.output()
    assert "parameter 'task'" in node.output() and "no_such_task" in node.output()  # (a long value is shortened)
    assert "Traceback" not in node.output()
