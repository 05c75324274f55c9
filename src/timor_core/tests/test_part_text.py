"""Issue 38 item 4: a module set is written from its bodies' and joints' texts made field by field
(``model.part_text``) and streamed as ``JsonLines`` (``common.json_text``); the file must be byte for byte what
``json_text`` of the parts' ``to_json()`` dicts gives, and every record exactly ``json.dumps(part.to_json())``:
on every part of the embedded sets, of example-robot-data's arms imported, and of hypothesis-made parts (odd
numbers, -0.0, NaN and infinities, numpy scalars, extra fields, arrays of other shapes)."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from urdf_agreement import example_urdfs, robots_share

from timor_core import ModulesDB
from timor_core.common.json_text import JsonLines, json_chunks, json_text
from timor_core.common.transforms import IDENTITY, readonly
from timor_core.export.urdf_import.importer import db_from_urdf
from timor_core.model import part_text
from timor_core.model.db import embedded_db_names
from timor_core.model.geometry import Box
from timor_core.model.part_text import body_text, joint_text, matrix_text
from timor_core.model.parts import Body, Connector, Joint

SHARE = robots_share()
ARMS = ("panda.urdf", "ur5_robot.urdf", "kinova.urdf", "xarm7.urdf", "z1.urdf")


def _sets() -> list[ModulesDB]:
    sets = [ModulesDB.from_name(name) for name in embedded_db_names()]
    if SHARE is not None:
        sets += [db_from_urdf(p, [SHARE.parent]) for p in example_urdfs(SHARE) if p.name in ARMS]
    return sets


def _old_text(db: ModulesDB) -> str:
    """The file as the set was written before (every record a ``to_json()`` dict through ``json.dumps``)."""
    return "".join(itertools.chain(json_chunks(db.to_json_data(lazy=False)), "\n"))


def test_every_part_of_the_shipped_sets_and_imported_arms_is_its_json_dumps():
    sets = _sets()
    assert len(sets) >= 3
    checked = 0
    for db in sets:
        for module in db:
            for b in module.bodies:
                assert body_text(b) == json.dumps(b.to_json()), (module.id, b.id)
            for j in module.joints:
                assert joint_text(j) == json.dumps(j.to_json()), (module.id, j.id)
            checked += len(module.bodies) + len(module.joints)
    assert checked > 100


def test_a_written_set_is_byte_for_byte_the_old_text(tmp_path):
    for k, db in enumerate(_sets()):
        path = db.to_json_file(tmp_path / f"set{k}" / "modules.json")
        assert path.read_text(encoding="utf-8") == _old_text(db), db.name


FLOATS = st.one_of(
    st.floats(),  # NaN and infinities too: written as json writes them
    st.sampled_from([0.0, -0.0, 1.0, -1.0, 1e308, -1e308, 5e-324, 0.1]),
    st.integers(-3, 3),
)


def _matrix(n: int) -> st.SearchStrategy[np.ndarray]:
    return st.lists(FLOATS, min_size=n * n, max_size=n * n).map(lambda v: np.array(v, dtype=float).reshape(n, n))


POSES = st.one_of(st.just(IDENTITY), _matrix(4), _matrix(4).map(readonly), _matrix(3), _matrix(2))
NAMES = st.text(max_size=6)  # escapes and non-ASCII characters too


@st.composite
def bodies(draw) -> Body:
    extra = draw(st.sampled_from([{}, {"_present": ("visual", "collision")}, {"_present": ("visual",)}, {"x": 1}]))
    connectors = tuple(Connector(f"c{k}", "b", draw(_matrix(4)), "m", "t") for k in range(draw(st.integers(0, 2))))
    visual = (Box(x=1.0, y=2.0, z=draw(FLOATS)),) if draw(st.booleans()) else ()
    mass = draw(st.one_of(FLOATS, st.sampled_from([np.float64(2.5), True])))
    com = draw(st.one_of(st.lists(FLOATS, min_size=3, max_size=3).map(np.array), st.lists(FLOATS, max_size=4)))
    return Body(draw(NAMES), mass, draw(st.one_of(_matrix(3), _matrix(4))), com, connectors, visual, (), extra)


@st.composite
def joints(draw) -> Joint:
    return Joint(
        id=draw(NAMES),
        type=draw(st.sampled_from(["fixed", "revolute"])),
        parent=draw(NAMES),
        child=draw(NAMES),
        pose_parent=draw(POSES),
        pose_child=draw(POSES),
        limits_json=draw(st.sampled_from([{}, {"positionLower": -1.0, "velocity": math.inf}])),
        gear_ratio=draw(st.none() | FLOATS),
        motor_inertia=draw(st.none() | FLOATS),
        friction_coulomb=draw(st.none() | FLOATS),
        friction_viscous=draw(st.none() | FLOATS),
        passive=draw(st.sampled_from([None, True, False])),
        extra=draw(st.sampled_from([{}, {"note": [1, 2]}, {"ID": "again"}])),
        axis=draw(st.sampled_from([(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, -0.0, 1.0)])),
    )


@settings(max_examples=200, deadline=None)
@given(bodies(), joints())
def test_any_part_is_its_json_dumps(b, j):
    assert body_text(b) == json.dumps(b.to_json())
    assert joint_text(j) == json.dumps(j.to_json())


def test_remembered_texts_tell_zero_from_minus_zero_and_stay_bounded(monkeypatch):
    monkeypatch.setattr(part_text, "_SEEN_MOST", 4)
    zero, minus = np.zeros((3, 3)), np.full((3, 3), -0.0)  # equal as numbers (and as dict keys), not as text
    assert matrix_text(zero) == json.dumps(zero.tolist()) != matrix_text(minus) == json.dumps(minus.tolist())
    assert matrix_text(zero) == json.dumps(zero.tolist())  # now remembered: still its own text
    for k in range(10):
        pose = np.eye(4) * (k + 2)
        assert matrix_text(pose) == json.dumps(pose.tolist())
        assert len(part_text._SEEN) <= 4


RECORDS = st.lists(st.dictionaries(st.text(max_size=3), st.integers() | st.lists(st.integers(), max_size=2)))


@settings(max_examples=200, deadline=None)
@given(RECORDS, st.integers(3, 4), st.integers(1, 600))  # the records at inline_depth (4), or their list (3)
def test_json_lines_write_as_the_records_would(records, depth, repeat):
    records = records * (repeat if len(records) < 2 else 1)  # past the batch of 256 records per piece
    plain = {"a": [{"records": records}]}
    lines = {"a": [{"records": JsonLines(json.dumps(r) for r in records)}]}
    assert json_text(lines, depth) == json_text(plain, depth)


def test_json_lines_are_made_as_the_text_is_asked_for():
    made: list[int] = []

    def texts():
        for i in range(600):
            made.append(i)
            yield json.dumps({"i": i})

    pieces = json_chunks({"a": [1], "records": JsonLines(texts())})
    assert [next(pieces) for _ in range(3)] == ["{\n  ", '"a": ', "[1]"] and made == []
    rest = list(pieces)
    assert len(made) == 600
    assert json.loads("".join(["{\n  ", '"a": ', "[1]", *rest])) == {"a": [1], "records": [{"i": i} for i in made]}


def test_json_lines_inside_a_one_line_record_are_refused():
    for depth in range(3):  # {"a": [{"records": ...}]} with the records' dict on one line: json meets JsonLines
        with pytest.raises(TypeError, match="JsonLines"):
            json_text({"a": [{"records": JsonLines(["1"])}]}, depth)
