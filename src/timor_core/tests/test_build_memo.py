"""What building a robot keeps between robots (s50b-ik): each body's Pinocchio inertia, made once per body, and the
last base placement checked, kept with its bytes. Robots built so equal robots built afresh; a placement whose
values change (the same array written in place) or that is not rigid is checked again."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.common.transforms import rot_z
from timor_core.errors import InputError
from timor_core.kinematics import build
from timor_core.model.assembly_models import placement_matrix

CHAINS = [
    ("base", "J", "L_100", "J", "L_250", "J", "L_100", "J", "I_200", "gripper"),
    ("base", "J", "L_200", "J", "L_150", "J", "I_300", "gripper"),
]


def _inertias(robot) -> list[np.ndarray]:
    return [np.array(Y.toDynamicParameters()) for Y in robot.model.inertias]


@pytest.mark.parametrize("ids", CHAINS)
def test_kept_inertias_build_the_same_robot(ids, monkeypatch):
    db = ModulesDB.from_name("robco_like")
    kept = [ModuleAssembly.from_serial_modules(db, ids).to_pin_robot() for _ in range(2)]
    kept[0].model.inertias[2] = pin.Inertia.Random()  # a robot's own model: not what the next robot gets
    with monkeypatch.context() as m:
        m.setattr(build, "_inertia", lambda body: build.body_inertia(body.mass, body.r_com, body.inertia))
        fresh = ModuleAssembly.from_serial_modules(db, ids).to_pin_robot()
    again = ModuleAssembly.from_serial_modules(db, ids).to_pin_robot()
    for robot in (kept[1], again):
        assert len(robot.model.inertias) == len(fresh.model.inertias)
        for a, b in zip(_inertias(robot), _inertias(fresh)):
            np.testing.assert_array_equal(a, b)


def test_a_placement_is_checked_by_its_values():
    P = rot_z(0.3)
    P[:3, 3] = (0.1, -0.2, 0.3)
    first = placement_matrix(P)
    np.testing.assert_array_equal(first, P)
    assert not first.flags.writeable and first is not P
    assert placement_matrix(P.copy()) is first  # the same values: the kept copy
    P[0, 3] = 0.5  # written in place: new values, a new copy
    moved = placement_matrix(P)
    assert moved[0, 3] == 0.5 and first[0, 3] == 0.1
    bad = P.copy()
    bad[0, 0] = 2.0
    with pytest.raises(InputError):
        placement_matrix(bad)
    with pytest.raises(InputError):
        placement_matrix(np.eye(3))
    np.testing.assert_array_equal(placement_matrix(P), moved)
