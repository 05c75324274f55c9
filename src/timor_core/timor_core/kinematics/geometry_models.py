"""Pinocchio geometry models of a robot's links: collision (coal shapes) and visual (primitives and mesh paths).

Both take the kinematic tree and the link placements PinRobot keeps (joint, frame and placement per link).
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin

__all__ = ["collision_model", "visual_model"]


def collision_model(tree, joint_of, frame_of, place_of) -> pin.GeometryModel:
    """The coal collision geometry of every link, placed on its joint (objects named ``<link>_c<k>``)."""
    gm = pin.GeometryModel()
    for k, link in enumerate(tree.links):
        base = place_of[k] @ link.body_in_link
        count = 0
        for g in link.body.collision:
            for shape, pose in g.coal_shapes():
                obj = pin.GeometryObject(f"{link.name}_c{count}", joint_of[k], frame_of[k], pin.SE3(base @ pose), shape)
                gm.addGeometryObject(obj)
                count += 1
    return gm


def visual_model(tree, joint_of, frame_of, place_of) -> pin.GeometryModel:
    """Visual geometry: primitives as coal shapes; meshes by file path (loaded by the viewer)."""

    from timor_core.model.geometry import Mesh

    gm = pin.GeometryModel()
    for k, link in enumerate(tree.links):
        base = place_of[k] @ link.body_in_link
        shapes: list = []
        for g in link.body.shown:
            if isinstance(g, Mesh):
                shapes.append((coal.BVHModelOBBRSS(), g.pose, str(g.path), np.asarray(g.scale, dtype=float)))
            else:
                shapes.extend((shape, pose, "", np.ones(3)) for shape, pose in g.coal_shapes())
        for count, (shape, pose, path, scale) in enumerate(shapes):
            placement = pin.SE3(base @ pose)
            name = f"{link.name}_v{count}"
            gm.addGeometryObject(pin.GeometryObject(name, joint_of[k], frame_of[k], placement, shape, path, scale))
    return gm
