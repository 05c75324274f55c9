"""Hostile requests to the timor nodes (issue 12): each is refused with a reason within a bounded time, the
nodes stay up, and /robot_description keeps the last good robot.

All three nodes run in one `timor ros up` process, as a user runs them: one request that killed a node used to
take the other two down with it.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from ros_helpers import start_up, stop, wait_for
from test_search_action import _send

from timor_interfaces.action import Search
from timor_interfaces.srv import GetAssembly, SetAssembly

GOOD = ["base", "J2", "i_45", "J2", "J2", "eef"]
DEEP = "[" * 100_000 + "]" * 100_000
POSE = [[1, 0, 0, 0.2], [0, 1, 0, 0.0], [0, 0, 1, 0.6], [0, 0, 0, 1]]
TASK = json.dumps({"header": {"ID": "t"}, "goals": [{"ID": "g", "type": "at", "goalPose": {"nominal": POSE}}]})
ANSWER_WITHIN = 15.0  # seconds: every refusal comes back well within this (measured: well under 1 s each)


@pytest.fixture(scope="module")
def up(tmp_path_factory, ros_client):
    log = tmp_path_factory.mktemp("log") / "up.log"
    proc = start_up("--db", "geometric_primitive_modules", "--modules", *GOOD, "--editable", log=log)

    def ready():
        return ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=30).available

    assert wait_for(ready, 40), log.read_text()
    yield proc, log
    assert proc.poll() is None, "the nodes' process died:\n" + log.read_text()
    assert stop(proc) == 0, log.read_text()


def _set(ros_client, modules=(), assembly_json="") -> tuple[SetAssembly.Response, float]:
    start = time.monotonic()
    request = SetAssembly.Request(modules=list(modules), assembly_json=assembly_json)
    response = ros_client.call(SetAssembly, "/assembly/set_assembly", request, timeout=ANSWER_WITHIN + 5)
    return response, time.monotonic() - start


def _alive(ros_client, good_urdf: str) -> None:
    """The nodes still answer and still publish the last good robot."""
    got = ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=10)
    assert got.available and got.urdf == good_urdf
    assert ros_client.latest_description() == good_urdf


@pytest.mark.parametrize(
    "modules, assembly_json, needle",
    [
        ([], DEEP, "nested"),
        ([], '{"moduleOrder": ["base"], "moduleOrder": ["eef"]}', "duplicate"),
        ([], '{"moduleOrder": []}', "at least one module"),
        ([], '{"moduleOrder": [' + "1" * 5001 + "]}", "digits"),
        ([], '{"moduleOrder": ["base", NaN]}', "NaN"),
        (["base", *["J2"] * 200, "eef"], "", "max_modules"),
        (["base", *["J2"] * 40, "eef"], "", "max_dof"),
        (["x" * 1_000_000], "", "no module with ID"),
        (["b\u00e4se", "eef"], "", "no module with ID"),
        ([], "[" * 65 + "]" * 65, "nested deeper"),
    ],
    ids=[
        "deep",
        "duplicate-keys",
        "empty-order",
        "huge-int",
        "nan",
        "200-modules",
        "40-joints",
        "1MB-id",
        "nul",
        "depth-64",
    ],
)
def test_hostile_set_assembly_is_refused_quickly(up, ros_client, modules, assembly_json, needle):
    good = ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=10).urdf
    response, seconds = _set(ros_client, modules, assembly_json)
    assert not response.success
    assert needle in response.message, response.message
    assert len(response.message) < 2000  # a megabyte-long ID is not echoed back whole
    assert response.urdf == good
    assert seconds < ANSWER_WITHIN, f"took {seconds:.1f} s"
    _alive(ros_client, good)


def _set_param(ros_client, name: str, value: ParameterValue):
    request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=value)])
    return ros_client.call(SetParameters, "/modules_db/set_parameters", request, timeout=ANSWER_WITHIN).results[0]


@pytest.mark.parametrize(
    "name, value, needle",
    [
        ("modules.J9", ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=DEEP), "nested"),
        ("modules.J9", ParameterValue(type=ParameterType.PARAMETER_INTEGER, integer_value=3), "string"),
        ("modules.J9", ParameterValue(type=ParameterType.PARAMETER_STRING, string_value='{"a":1,"a":2}'), "duplicate"),
        ("db_name", ParameterValue(type=ParameterType.PARAMETER_STRING, string_value="x"), ""),
    ],
    ids=["deep-module", "int-module", "duplicate-keys", "read-only"],
)
def test_hostile_parameters_are_refused(up, ros_client, name, value, needle):
    good = ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=10).urdf
    result = _set_param(ros_client, name, value)
    assert not result.successful
    assert needle in result.reason
    _alive(ros_client, good)


@pytest.mark.parametrize(
    "goal, needle",
    [
        (Search.Goal(task_json=DEEP), "nested"),
        (Search.Goal(task_path="/dev/zero"), "outside the trusted task folders"),
        (Search.Goal(task_path="relative/task.json"), "absolute"),
        (Search.Goal(task_path="/nonexistent/task.json"), "outside the trusted task folders"),
        (Search.Goal(task_path="/etc/passwd"), "outside the trusted task folders"),
        (Search.Goal(task_json='{"header": {"ID": "t"}, "goals": []}', budget_seconds=-1.0), "budget_seconds"),
        (Search.Goal(task_json='{"header": {"ID": "t"}, "goals": []}', budget_seconds=math.inf), "budget_seconds"),
        (Search.Goal(task_json='{"header": {"ID": "t"}, "goals": []}', budget_evals=-5), "budget_evals"),
        (Search.Goal(task_json='{"header": {"ID": "t"}, "goals": []}', seed=-1), "seed"),
        (Search.Goal(task_json=TASK, space="/etc/passwd"), "space"),
        (Search.Goal(task_json=TASK, space='{"dof_max": 1000000}'), "dof_max"),
    ],
    ids=[
        "deep-task",
        "dev-zero",
        "relative",
        "missing",
        "untrusted",
        "negative-budget",
        "inf-budget",
        "negative-evals",
        "negative-seed",
        "space-file",
        "huge-space",
    ],
)
def test_hostile_search_goals_abort_with_a_reason(up, ros_client, goal, needle):
    good = ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=10).urdf
    start = time.monotonic()
    result, _ = _send(ros_client, goal, timeout=ANSWER_WITHIN)
    assert time.monotonic() - start < ANSWER_WITHIN
    assert result.status == 6, result  # ABORTED
    assert needle in result.result.message, result.result.message
    _alive(ros_client, good)


def test_a_good_request_still_works_after_the_hostile_ones(up, ros_client):
    response, seconds = _set(ros_client, ["base", "J1", "l_30", "J2", "eef"])
    assert response.success, response.message
    assert wait_for(lambda: ros_client.latest_description() == response.urdf, 10)
    back, _ = _set(ros_client, GOOD)
    assert back.success
    proc, log = up
    assert proc.poll() is None, log.read_text()
    assert "refused" in log.read_text()  # each refusal was logged, one line each


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--prefix", 'a"/><evil/>'], "prefix"),
        (["--db", "/dev/zero"], "not a regular file"),
        (["--ros2-control", 'a"><b'], "plugin"),
    ],
    ids=["prefix", "dev-zero", "plugin"],
)
def test_hostile_start_up_settings_are_refused_with_one_line(tmp_path, args, needle):
    import subprocess
    import sys

    base = ["--db", "geometric_primitive_modules"] if "--db" not in args else []
    proc = subprocess.run(
        [sys.executable, "-m", "timor_core.cli", "ros", "up", *base, *args, "--no-search"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    assert needle in proc.stderr
