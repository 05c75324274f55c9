"""Start moveit.launch.py with the real move_group and ros2_control on mock hardware, and wait until both are ready."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from control_tools import JointStateCache, controller_states, controller_states_or_why
from ros2_cli import Launch, deaths, died, require_ros2, wait_for_output
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
    assert not died(launch.output()), deaths(launch.output())


def settled(
    states: JointStateCache,
    joints: list[str],
    last,
    tf: TfListener,
    frames: tuple[str, str],
    fk: Callable[[np.ndarray], np.ndarray],
    tol: float = 2e-3,
    misses: int = 100,
    cap: float = 180.0,
) -> tuple[np.ndarray | None, str]:
    """The joint positions once a sample is within ``tol`` of the plan's ``last`` point and a TF of ``frames`` (root,
    tip) received after that sample equals ``fk(sample)`` within ``tol`` (m and rad); else None and why.

    Compared with the FK of the measured sample, not of the goal: move_group samples a joint goal anywhere within
    its tolerance, so the robot rests up to that far from the requested values (2 % of test_moveit_swap's
    four-joint goals put tool0 more than 2e-3 rad away from the goal's FK). A sample of the motion's last moments
    is near ``last`` without being there, so TF must agree with that same sample, and be received after it. Fails
    on events, not on a guessed time: after ``misses`` fresh TF updates that each disagree, or ``cap`` s without
    agreement (nothing arriving).
    """
    root, tip = frames
    end, seen, why = time.monotonic() + cap, 0, "no joint states"
    while time.monotonic() < end:
        q = states.positions(joints, timeout=1.0)
        if q is None or float(np.max(np.abs(q - np.asarray(last)))) >= tol:
            why = f"joints at {q}, the plan ends at {np.asarray(last)}"
            time.sleep(0.05)
            continue
        pose = tf.wait_for(root, [tip], 2.0, newer_than=time.monotonic()).get(tip)
        if pose is None:
            why = f"no TF {root} -> {tip} after the joints' sample"
            continue
        dp, dr = pose_error(pose, fk(q))
        if dp < tol and dr < tol:
            return q, ""
        seen += 1
        why = f"TF {root} -> {tip} off the FK of the joints {q} by {dp:.1e} m, {dr:.1e} rad ({seen} fresh updates)"
        if seen >= misses:
            break
    return None, why
