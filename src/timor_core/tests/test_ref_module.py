"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_module.py (timor-python 1.1.1) ported
to timor_core (modules are immutable and built from CoBRA JSON; parameterizable modules are
``timor_core.model.parametric.ParametricModule``)."""

from __future__ import annotations

import copy
import itertools
import math

import numpy as np
import pinocchio as pin
import pytest
from conftest import primitives_json

from timor_core import ModulesDB, ValidationError
from timor_core.model.module import Connector, Module, connectors_compatible
from timor_core.model.parametric import ParametricModule


def _connector(cid: str, gender: str, ctype: str = "test", size: float = 80.0) -> Connector:
    return Connector(cid, "body", pin.SE3.Random().homogeneous, gender, ctype, (size,))


def test_classification(primitives):
    """ref: test_module.py::test_classification (bases, joints, links, end effectors)"""
    # deliberate difference: a set is split by its modules' properties (db.bases/joints/links/end_effectors);
    # there is no separate classifier with a strict mode
    kinds = [primitives.bases, primitives.joints, primitives.links, primitives.end_effectors]
    assert [len(k) for k in kinds] == [1, 3, 6, 1]
    assert sum(len(k) for k in kinds) == len(primitives)
    assert {m.id for m in primitives.bases} == {"base"} and {m.id for m in primitives.end_effectors} == {"eef"}
    assert all(m.dof == 1 for m in primitives.joints) and all(m.dof == 0 for m in primitives.links)


def test_connector():
    """ref: test_module.py::test_connector"""
    first = _connector("1", "f")
    duplicate = Connector("1", "body", first.pose.copy(), "f", "test", (80.0,))
    second, third, fourth = _connector("2", "m"), _connector("3", "h"), _connector("4", "h")
    fifth, sixth = _connector("5", "h", size=120.0), _connector("6", "h", ctype="test_other")
    everyone = (first, second, third, fourth, fifth, sixth)
    assert connectors_compatible(first, second) and connectors_compatible(third, fourth)
    assert first.id == duplicate.id and np.array_equal(first.pose, duplicate.pose)
    for other in everyone:
        if other is not fifth:
            assert not connectors_compatible(fifth, other)
        if other is not sixth:
            assert not connectors_compatible(sixth, other)
        # hermaphroditic connectors fit an identical twin, male and female never
        assert connectors_compatible(other, other) == (other.gender == "h")
    for a, b in itertools.combinations_with_replacement(everyone, 2):
        assert connectors_compatible(a, b) == connectors_compatible(b, a)
    base = Connector("b", "body", np.eye(4), "f", "base", ())
    assert not connectors_compatible(base, Connector("c", "body", np.eye(4), "m", "base", ()))  # reserved type


def test_joint():
    """ref: test_module.py::test_joint (joint data survive a JSON round trip; body IDs must be unique)"""
    data = primitives_json()
    joint_json = data["modules"][1]["joints"][0]
    joint_json.update(gearRatio=77.0, motorInertia=0.003, frictionCoulomb=0.4, frictionViscous=0.2)
    module = Module.from_json(data["modules"][1], "$")
    again = Module.from_json(module.to_json(), "$")
    assert again.to_json() == module.to_json()
    j = again.joints[0]
    assert (j.gear_ratio, j.motor_inertia, j.friction_coulomb, j.friction_viscous) == (77.0, 0.003, 0.4, 0.2)
    np.testing.assert_allclose(j.pose_parent @ np.linalg.inv(j.pose_parent), np.eye(4), atol=1e-12)
    doubled = copy.deepcopy(data["modules"][1])
    doubled["bodies"][1]["ID"] = doubled["bodies"][0]["ID"]
    with pytest.raises(ValidationError, match="duplicate"):
        ModulesDB.from_json_data({"modules": [doubled]})


def test_module(primitives):
    """ref: test_module.py::test_module (IDs unique within a module; a module round-trips)"""
    for module in primitives:
        again = Module.from_json(module.to_json(), "$")
        assert again.to_json() == module.to_json()
        ids = [b.id for b in module.bodies] + [j.id for j in module.joints]
        assert len(ids) == len(set(ids))


def test_parameterizable_module():
    """ref: test_module.py::test_parameterizable_module and ::test_parameterizable_module_with_joint"""
    link = ParametricModule("cylinder_link", "c", (0.1, 1.0), density=1000.0)
    resized = link.resize((0.2, 2.0))
    ratio = resized.freeze().mass / link.freeze().mass
    assert ratio == pytest.approx(8.0)  # radius twice, length twice: 2^2 * 2
    joint = ParametricModule("straight_joint", "j", (0.1, 1.0), joint={"limits": {"positionLower": -1.0}})
    module = joint.freeze()
    assert module.dof == 1 and module.joints[0].limits.lower == -1.0
    frozen = Module.from_json(module.to_json(), "$")
    assert frozen.to_json() == module.to_json()


def test_parameterizable_dh_module():
    """ref: test_module.py::test_parameterizable_dh_module (the module's transform is the DH transform)"""
    for convention in ("DH", "MDH"):
        m = ParametricModule("dh_joint", "dh", (0.05, 0.3, 0.2, math.pi / 3), convention=convention)
        module = m.freeze()
        joint = module.joints[0]
        proximal = next(c for c in module.connectors.values() if c.gender == "f")
        distal = next(c for c in module.connectors.values() if c.gender == "m")
        bodies = {b.id: b for b in module.bodies}
        assert proximal.body_id in bodies and distal.body_id in bodies
        flip = np.diag([1.0, -1.0, -1.0, 1.0])  # a proximal connector faces away from its module
        for theta in (0.0, 0.7, -2.0):  # proximal connector -> joint at theta -> distal connector
            got = np.linalg.inv(proximal.pose @ flip) @ joint.pose_parent
            got = got @ pin.exp6(np.array([0, 0, 0, 0, 0, theta])).homogeneous @ joint.pose_child @ distal.pose
            np.testing.assert_allclose(got, m.dh_transform(theta), atol=1e-12)
