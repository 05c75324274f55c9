"""A module set with branching modules (for tests of trees): the embedded geometric primitives plus ``base3``
(a base with three outputs) and ``tee`` (a link with a second distal connector). Used by timor_core's tests and by
timor_ros's tests of the real robot_state_publisher."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import timor_core

PRIMITIVES = Path(timor_core.__file__).parent / "data" / "geometric_primitive_modules" / "modules.json"


def branched_json() -> dict:
    """Primitives plus a base with three outputs and a 'tee' link with two distal connectors."""
    data = copy.deepcopy(json.loads(PRIMITIVES.read_text()))
    base = copy.deepcopy(next(m for m in data["modules"] if m["header"]["ID"] == "base"))
    base["header"]["ID"] = base["header"]["name"] = "base3"
    out = next(c for c in base["bodies"][0]["connectors"] if c["ID"] == "base_out")
    base["bodies"][0]["connectors"].remove(out)
    for k, y in enumerate((0.4, 0.0, -0.4)):
        c = copy.deepcopy(out)
        c["ID"] = f"out_{k}"
        c["pose"][1][3] = y
        base["bodies"][0]["connectors"].append(c)
    tee = copy.deepcopy(next(m for m in data["modules"] if m["header"]["ID"] == "l_15"))
    tee["header"]["ID"] = tee["header"]["name"] = "tee"
    body = tee["bodies"][0]
    body["ID"] = "tee_body"
    for c in body["connectors"]:
        c["ID"] = c["ID"].replace("l_15", "tee")
    distal = next(c for c in body["connectors"] if "distal" in c["ID"])
    side = copy.deepcopy(distal)
    side["ID"] = "tee_side_connector"
    side["pose"][0][3] += 0.1
    body["connectors"].append(side)
    data["modules"].append(base)
    data["modules"].append(tee)
    return data
