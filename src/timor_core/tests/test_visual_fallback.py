"""A body without visual geometry is drawn with its collision geometry, as the reference toolbox does.

Without the fallback a robot of primitive modules (which give only collision geometry) had empty URDF visuals
and showed nothing in RViz or the viewer (issue 13, item 11).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conftest import primitives_json, write_db

from timor_core import ModuleAssembly, ModulesDB


def _without_visuals(tmp_path) -> ModulesDB:
    data = primitives_json()
    for m in data["modules"]:
        for b in m["bodies"]:
            b.pop("visual", None)
    return ModulesDB.from_json_file(write_db(tmp_path, data))


def _link_geometry(urdf: str, tag: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for link in ET.fromstring(urdf).iter("link"):
        out[link.get("name", "")] = [ET.tostring(g.find("geometry")).decode() for g in link.findall(tag)]
    return out


def test_bodies_without_visual_are_drawn_with_their_collision_geometry(tmp_path):
    db = _without_visuals(tmp_path)
    assert all(not b.visual for m in db for b in m.bodies)  # the set gives no visual geometry at all
    A = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef"))
    urdf = A.to_urdf()
    visual, collision = _link_geometry(urdf, "visual"), _link_geometry(urdf, "collision")
    assert sum(map(len, visual.values())) > 0
    assert visual == collision  # the same shapes, link by link
    assert A.robot.visual.ngeoms == sum(map(len, collision.values()))


def test_bodies_with_visual_geometry_keep_it(robco: ModulesDB):
    bodies = [b for m in robco for b in m.bodies]
    with_visual = [b for b in bodies if b.visual]
    assert with_visual, "the robco_like set should have bodies with their own visual geometry"
    for b in bodies:
        assert b.shown == (b.visual if b.visual else b.collision)
