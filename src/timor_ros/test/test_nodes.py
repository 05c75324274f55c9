"""The modules_db and assembly nodes, run by `timor ros up` in their own process, seen from other processes."""

from __future__ import annotations

import json
import shutil
import signal
import time
from importlib import resources

import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import parameter_value_to_python
from ros_helpers import rss_kib, run_script, start_up, stop, wait_for

from timor_core import ModulesDB
from timor_core.ros.robot_description import module_from_json_text
from timor_interfaces.srv import GetAssembly, SetAssembly
from timor_ros.parameters import module_param_name

pin = pytest.importorskip("pinocchio")

FIRST = ["base", "J2", "i_45", "J2", "J2", "eef"]
SECOND = ["base", "J1", "l_30", "J2", "eef"]


@pytest.fixture(scope="module")
def db_file(tmp_path_factory):
    folder = tmp_path_factory.mktemp("db")
    src = resources.files("timor_core") / "data" / "geometric_primitive_modules" / "modules.json"
    with resources.as_file(src) as f:
        shutil.copy(f, folder / "modules.json")
    return folder / "modules.json"


@pytest.fixture(scope="module")
def up(db_file, tmp_path_factory, ros_client):
    log = tmp_path_factory.mktemp("log") / "up.log"
    proc = start_up("--db", str(db_file), "--modules", *FIRST, "--editable", "--persist", "--no-search", log=log)

    def ready():
        r = ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=30)
        return r.available

    assert wait_for(ready, 30), log.read_text()
    yield proc
    rc = stop(proc)
    print(log.read_text())
    assert rc == 0


def _set(ros_client, modules=(), assembly_json="") -> SetAssembly.Response:
    request = SetAssembly.Request(modules=list(modules), assembly_json=assembly_json)
    return ros_client.call(SetAssembly, "/assembly/set_assembly", request, timeout=30)


def _dof(urdf: str) -> int:
    return pin.buildModelFromXML(urdf).nq


def test_subscriber_started_after_publication_gets_description(up):
    r = run_script("echo_description.py", "20")
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert _dof(got["urdf"]) == 3
    assert '<group name="manipulator">' in got["srdf"]


def test_new_assembly_is_published_and_parses(up, ros_client):
    before = ros_client.latest_description()
    r = _set(ros_client, SECOND)
    assert r.success, r.message
    assert r.failed_step == ""
    assert "robot_state_publisher skipped" in r.message  # no robot_state_publisher here: skipped, reported
    now = ros_client.latest_description(after=before)
    assert now == r.urdf
    assert _dof(now) == 2
    # from another process too
    out = json.loads(run_script("echo_description.py", "20").stdout)
    assert out["urdf"] == r.urdf
    # deterministic: the same assembly gives the same text
    assert _set(ros_client, SECOND).urdf == r.urdf
    assert _set(ros_client, FIRST).success


@pytest.mark.parametrize(
    "modules, assembly_json, needle",
    [
        (["base", "NOPE", "eef"], "", "NOPE"),
        (["base", "eef", "J2"], "", "no free connector"),
        ([], "{not json", "invalid JSON"),
        ([], json.dumps({"moduleOrder": ["base", "J2"], "moduleConnection": [[0, "x", 1, "y"]]}), "x"),
        (["base", "J2"], '{"moduleOrder": ["base"]}', "not both"),
        ([], "", "empty request"),
    ],
)
def test_refused_request_keeps_last_good_description(up, ros_client, modules, assembly_json, needle):
    good = ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request())
    r = _set(ros_client, modules, assembly_json)
    assert not r.success
    assert r.failed_step == "validate"
    assert needle in r.message
    assert r.urdf == good.urdf  # the response carries what is still published
    # a new subscriber gets it (another process does too: test_new_assembly_is_published_and_parses)
    assert ros_client.latest_description() == good.urdf
    assert ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request()).modules == good.modules


def test_modules_db_parameters_from_another_process(up, ros_client, db_file):
    names = ["module_ids", "db_name", "db_source", module_param_name("J2")]
    r = ros_client.call(GetParameters, "/modules_db/get_parameters", GetParameters.Request(names=names))
    values = [parameter_value_to_python(v) for v in r.values]
    # the set as served now: the file it persists to (a module added by the edit test, in whatever order they ran)
    db = ModulesDB.from_json_file(db_file)
    assert list(values[0]) == list(db.ids)
    assert values[2].endswith("modules.json")
    assert module_from_json_text(values[3]).to_json() == db.by_id("J2").to_json()


def _set_param(ros_client, name: str, text: str):
    value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=text)
    request = SetParameters.Request(parameters=[ParameterMsg(name=name, value=value)])
    return ros_client.call(SetParameters, "/modules_db/set_parameters", request).results[0]


def test_runtime_module_edit_is_validated_and_persisted(up, ros_client, db_file):
    db = ModulesDB.from_json_file(db_file)
    bad = _set_param(ros_client, "modules.J9", '{"header": {"ID": "J9"}}')
    assert not bad.successful and "J9" in bad.reason
    wrong_name = _set_param(ros_client, "modules.J9", json.dumps(db.by_id("J2").to_json()))
    assert not wrong_name.successful and "modules.J2" in wrong_name.reason
    new = db.by_id("J2").to_json()
    new["header"]["ID"] = "J2b"
    ok = _set_param(ros_client, "modules.J2b", json.dumps(new))
    assert ok.successful, ok.reason
    ids = ros_client.call(GetParameters, "/modules_db/get_parameters", GetParameters.Request(names=["module_ids"]))
    assert list(parameter_value_to_python(ids.values[0]))[-1] == "J2b"
    assert "J2b" in ModulesDB.from_json_file(db_file)  # written back
    # the assembly node sees the new module (its cache follows /parameter_events)
    r = wait_for(lambda: _set(ros_client, ["base", "J2b", "eef"]).success, 10, 0.5)
    assert r
    assert _set(ros_client, FIRST).success


def test_500_requests_keep_memory_flat(up, ros_client):
    pid = up.pid
    cycle = [FIRST, SECOND, ["base", "NOPE"], ["base", "J2", "l_45", "J1", "eef"], []]

    def burst(n: int) -> float:
        t0 = time.perf_counter()
        for k in range(n):
            _set(ros_client, cycle[k % len(cycle)], "" if cycle[k % len(cycle)] else "{bad")
        return time.perf_counter() - t0

    burst(50)  # warm-up: caches, DDS buffers
    rss0 = rss_kib(pid)
    seconds = burst(250)
    rss1 = rss_kib(pid)
    seconds += burst(250)
    rss2 = rss_kib(pid)
    print(
        f"\nRSS of the node process: {rss0} KiB after 50 warm-up requests, {rss1} KiB after 250 more,"
        f" {rss2} KiB after 500 (+{rss2 - rss0} KiB; second half +{rss2 - rss1} KiB); {500 / seconds:.0f} requests/s"
    )
    assert rss2 - rss1 < 4096, "memory grows with the number of requests"
    assert rss2 - rss0 < 8192


def test_sigint_of_timor_ros_up_exits_0(tmp_path, ros_client):
    log = tmp_path / "up.log"
    proc = start_up("--db", "geometric_primitive_modules", "--no-search", "--ros-args", "-r", "__ns:=/sig", log=log)
    try:
        assert wait_for(
            lambda: "serving module set" in log.read_text() and "assembly" in str(ros_client.node.get_node_names()), 20
        ), log.read_text()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(20) == 0, log.read_text()
        assert "Traceback" not in log.read_text()
    finally:
        stop(proc)


def test_robot_state_publisher_parameter_follows_and_failure_restores(up, ros_client):
    """A stand-in robot_state_publisher (in this process): set on success; when it refuses, the transaction
    fails at that step and the last good description is published again."""
    from rcl_interfaces.msg import SetParametersResult
    from rclpy.node import Node

    rsp = Node("robot_state_publisher", context=ros_client.context)
    rsp.declare_parameter("robot_description", "")
    refuse = {"on": False}
    rsp.add_on_set_parameters_callback(lambda _p: SetParametersResult(successful=not refuse["on"], reason="nope"))
    ros_client.add_node(rsp)
    try:
        assert wait_for(lambda: _set(ros_client, FIRST).message.endswith("robot_state_publisher updated"), 15, 0.3)
        r = _set(ros_client, SECOND)
        assert r.success and rsp.get_parameter("robot_description").value == r.urdf
        good = r.urdf
        refuse["on"] = True
        bad = _set(ros_client, FIRST)
        assert not bad.success and bad.failed_step == "robot_state_publisher" and "nope" in bad.message
        assert bad.urdf == good
        assert json.loads(run_script("echo_description.py", "20").stdout)["urdf"] == good
        assert list(ros_client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request()).modules) == SECOND
    finally:
        ros_client.executor.remove_node(rsp)
        rsp.destroy_node()
    assert wait_for(lambda: "skipped" in _set(ros_client, FIRST).message, 15, 0.5)
