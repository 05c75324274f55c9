"""Several robots in one ROS 2 system: one set of timor nodes per namespace, each robot with its own name prefix.

Two `timor ros up` processes run side by side in /r1 and /r2 (``--ros-args -r __ns:=/rN``). Each assembly node
finds the modules_db node of its own namespace, publishes on its own robot_description topic, and a
reconfiguration of one robot leaves the other's description alone.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from rcl_interfaces.srv import GetParameters
from ros_helpers import start_up, stop, wait_for

from timor_interfaces.srv import GetAssembly, SetAssembly

FIRST = ["base", "J2", "i_45", "J2", "J2", "eef"]
SECOND = ["base", "J1", "l_30", "J2", "eef"]


@pytest.fixture(scope="module")
def two_robots(tmp_path_factory, ros_client):
    logs = tmp_path_factory.mktemp("log")
    procs = []
    for ns, modules in (("r1", FIRST), ("r2", SECOND)):
        args = ["--db", "geometric_primitive_modules", "--modules", *modules, "--prefix", f"{ns}_", "--no-search"]
        procs.append((start_up(*args, "--ros-args", "-r", f"__ns:=/{ns}", log=logs / f"{ns}.log"), logs / f"{ns}.log"))
    for ns in ("r1", "r2"):
        service = f"/{ns}/assembly/get_assembly"

        def ready(service=service):
            return ros_client.call(GetAssembly, service, GetAssembly.Request(), timeout=30).available

        assert wait_for(ready, 30), "\n".join(log.read_text() for _, log in procs)
    yield
    for proc, log in procs:
        assert stop(proc) == 0, log.read_text()


def _links(urdf: str) -> set[str]:
    return {link.get("name") for link in ET.fromstring(urdf).iter("link")}


def test_each_namespace_has_its_own_robot(two_robots, ros_client):
    r1 = ros_client.latest_description(topic="/r1/robot_description")
    r2 = ros_client.latest_description(topic="/r2/robot_description")
    assert "r1_base_link" in _links(r1) and not any(name.startswith("r2_") for name in _links(r1))
    assert "r2_base_link" in _links(r2) and not any(name.startswith("r1_") for name in _links(r2))
    assert ros_client.latest_description(timeout=1.0, topic="/robot_description") == ""  # nothing in the root
    srdf = ros_client.latest_description(topic="/r1/robot_description_semantic")
    assert ET.fromstring(srdf).find("group/chain").get("tip_link") == "r1_tool0"
    # the module set is read from the modules_db node of the same namespace
    names = ros_client.call(GetParameters, "/r1/modules_db/get_parameters", GetParameters.Request(names=["db_name"]))
    assert names.values[0].string_value == "geometric_primitive_modules"


def test_reconfiguring_one_robot_leaves_the_other_alone(two_robots, ros_client):
    before_r2 = ros_client.latest_description(topic="/r2/robot_description")
    before_r1 = ros_client.latest_description(topic="/r1/robot_description")
    request = SetAssembly.Request(modules=SECOND)
    response = ros_client.call(SetAssembly, "/r1/assembly/set_assembly", request, timeout=30)
    assert response.success, response.message
    after_r1 = ros_client.latest_description(topic="/r1/robot_description", after=before_r1)
    assert after_r1 != before_r1 and "r1_base_link" in _links(after_r1)
    assert ros_client.latest_description(topic="/r2/robot_description") == before_r2  # first message: r2 as before
