"""Start moveit.launch.py with the real move_group and ros2_control on mock hardware, and wait until both are ready."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from control_tools import controller_states, controller_states_or_why
from ros2_cli import Launch, died, require_ros2, wait_for_output
from ros_helpers import wait_for
from tf_tools import TfListener, pose_error

CHAIN = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
SIX = ["base", "J", "L_100", "J", "L_250", "J", "L_250", "J", "L_100", "J", "L_100", "J", "gripper"]
ACTIVE = {"joint_state_broadcaster": "active", "arm_controller": "active"}
READY = "You can start planning now"


def abs_name(ns: str, name: str) -> str:
    """``name`` below namespace ``ns`` (the root namespace if empty)."""
    return f"/{ns}/{name}" if ns else f"/{name}"


@contextlib.contextmanager
def move_group_launch(
    ros_client,
    tmp_path: Path,
    modules: list[str],
    ns: str = "",
    prefix: str = "",
    extra: tuple[str, ...] = (),
    db: str = "robco_like",
) -> Iterator[Launch]:
    """moveit.launch.py for ``modules`` of ``db``, until move_group plans and the controllers are active; then
    stopped, with no process of it left behind and none died."""
    require_ros2()
    args = ["timor_ros", "moveit.launch.py", f"db:={db}", f"modules:={' '.join(modules)}", "rviz:=false",
            "search:=false", f"config_dir:={tmp_path / 'config'}", *extra]  # fmt: skip
    args += [f"prefix:={prefix}"] if prefix else []
    args += [f"namespace:={ns}"] if ns else []
    launch = Launch(args, tmp_path / "launch.log")
    try:
        assert wait_for_output(launch, READY, 120), launch.output()[-4000:]
        manager = abs_name(ns, "controller_manager")
        states = wait_for(lambda: ACTIVE.items() <= controller_states(ros_client, manager).items(), 120, 0.2)
        why = controller_states_or_why  # called only if the assertion fails
        assert states, f"controllers not active: {why(ros_client, manager)}\n{launch.output()[-4000:]}"
        topic = abs_name(ns, "moveit_supervisor/status")  # move_group plans from the robot's current state
        status = ros_client.wait_latched(topic, lambda text: '"ok": true' in text, 120)
        assert '"ok": true' in status, (status, launch.output()[-4000:])
        yield launch
    finally:
        launch.stop()
        left = launch.kill_leftovers()
        assert not left, f"processes left behind: {left}"
    assert not died(launch.output()), launch.output()[-4000:]


def tcp_close(tf: TfListener, prefix: str, expected, tol: float = 2e-3) -> bool:
    """The TF of ``prefix``tool0 in ``prefix``base_link equals ``expected`` (4x4) within ``tol`` (m and rad)."""
    pose = tf.lookup(prefix + "base_link", prefix + "tool0")
    if pose is None:
        return False
    dp, dr = pose_error(pose, expected)
    return dp < tol and dr < tol
