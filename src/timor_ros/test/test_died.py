"""``ros2_cli.died``: which "process has died" lines of a launch log fail a test (pure text, no ROS needed)."""

from __future__ import annotations

from ros2_cli import died

_SIGINT = "[WARNING] [launch]: user interrupted with ctrl-c (SIGINT)"
_FEEDBACK = (
    "[move_group-1] terminate called after throwing an instance of 'rclcpp::exceptions::RCLError'\n"
    "[move_group-1]   what():  feedback publisher is invalid, at /project/src/rcl_action/action_server.c:1040"
)
_DEATH = "[ERROR] [move_group-1]: process has died [pid 4242, exit code -6, cmd 'move_group']"


def test_move_groups_idle_feedback_after_sigint_is_a_known_upstream_crash() -> None:
    log = "\n".join(["[move_group-1] [INFO] Solution was found and executed.", _SIGINT, _FEEDBACK, _DEATH])
    assert died(log) == []


def test_the_same_crash_before_the_launch_was_stopped_fails() -> None:
    log = "\n".join([_FEEDBACK, _DEATH, _SIGINT])
    assert died(log) == [_DEATH]


def test_move_group_dying_at_shutdown_for_another_reason_fails() -> None:
    log = "\n".join([_SIGINT, "[move_group-1] Segmentation fault", _DEATH])
    assert died(log) == [_DEATH]
