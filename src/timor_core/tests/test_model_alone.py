"""The model works alone (issue 27): importing it loads no higher layer, and its methods that reach a higher layer
(``to_urdf``, ``robot``) import their implementation when called, so nothing has to be imported first."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1])


def _fresh(code: str) -> dict:
    """Run ``code`` in a fresh interpreter (nothing of timor_core imported yet); it prints one JSON line."""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=SRC)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


LOADED = """
def loaded():
    import sys
    layers = sorted({m.split('.')[1] for m in sys.modules if m.startswith('timor_core.')})
    heavy = sorted(m for m in ('pinocchio', 'coal', 'scipy', 'trimesh', 'matplotlib', 'pygad', 'manifold3d', 'viser',
                               'numba') if m in sys.modules)
    return layers, heavy
"""


def test_import_timor_core_model_alone_loads_no_higher_layer_and_gives_a_working_model():
    got = _fresh(
        LOADED
        + """
import json
from pathlib import Path
import timor_core.model
from timor_core.errors import ConnectorError
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.model.validation import validate_db_file

db = ModulesDB.from_name("geometric_primitive_modules")
A = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef"))
again = ModuleAssembly.from_json_string(db, A.to_json_string())
try:
    ModuleAssembly.from_serial_modules(db, ("base", "eef", "J2"))
    refused = False
except ConnectorError:
    refused = True
problems = validate_db_file(Path(db.source), strict=True)
layers, heavy = loaded()
print(json.dumps({"layers": layers, "heavy": heavy, "dof": A.dof, "mass": A.mass, "links": len(A.tree().links),
                  "same": again.to_json_data() == A.to_json_data(), "refused": refused,
                  "problems": [str(p) for p in problems]}))
"""
    )
    assert got["layers"] == ["common", "errors", "limits", "model"], got["layers"]
    assert got["heavy"] == [], got["heavy"]
    assert got["dof"] == 3 and got["mass"] > 0 and got["links"] > 3
    assert got["same"] and got["refused"] and got["problems"] == []


def test_to_urdf_and_robot_after_importing_only_the_assembly_module():
    got = _fresh(
        LOADED
        + """
import json
import xml.etree.ElementTree as ET
import timor_core.model.assembly as assembly

db = assembly.ModulesDB.from_name("geometric_primitive_modules")
A = assembly.ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef"))
root = ET.fromstring(A.to_urdf())
after_urdf = loaded()
robot = A.robot
print(json.dumps({"joints": sum(j.get("type") == "revolute" for j in root.iter("joint")), "dof": robot.dof,
                  "pairs": len(robot.collision_pairs), "after_urdf": after_urdf}))
"""
    )
    assert got["joints"] == 3 and got["dof"] == 3 and got["pairs"] > 0
    layers, heavy = got["after_urdf"]
    assert "export" in layers and "kinematics" not in layers and "viz" not in layers and "pinocchio" not in heavy


def test_import_timor_core_loads_no_layer_until_a_name_is_used():
    got = _fresh(
        LOADED
        + """
import json
import timor_core
first = loaded()
from timor_core import ModuleAssembly, ModulesDB
second = loaded()
print(json.dumps({"first": first, "second": second, "names": sorted(set(timor_core.__all__) - set(dir(timor_core)))}))
"""
    )
    assert got["first"] == [["errors"], []], got["first"]
    assert got["second"][0] == ["common", "errors", "limits", "model"] and got["second"][1] == []
    assert got["names"] == []  # every public name is listed by dir()
