"""Pinocchio geometry models of a robot's links: collision (coal shapes) and visual (primitives and mesh paths).

Both take the kinematic tree and the link placements PinRobot keeps (joint, frame and placement per link).
"""

from __future__ import annotations

import coal
import numpy as np
import pinocchio as pin

from timor_core.common.path_memo import resolving_paths

__all__ = ["check_collision_geometry", "collision_model", "visual_model"]


def check_collision_geometry(tree) -> None:
    """Raise now the MeshError (naming file, field and value) :func:`collision_model` would raise: every link's
    collision meshes loaded (cached), a convex decomposition's hulls built; a triangle mesh's BVH tree, which can
    take longer to build than the rest of a robot, is left for the first collision query."""
    with resolving_paths():
        for link in tree.links:
            for g in link.body.collision:
                g.check_coal()


def collision_model(tree, joint_of, frame_of, place_of) -> pin.GeometryModel:
    """The coal collision geometry of every link, placed on its joint (objects named ``<link>_c<k>``)."""
    gm = pin.GeometryModel()
    with resolving_paths():  # a mesh the cache dropped is found again
        for k, link in enumerate(tree.links):
            base = place_of[k] @ link.body_in_link
            shapes = [placed for g in link.body.collision for placed in g.coal_shapes()]
            for count, (shape, pose) in enumerate(shapes):
                name = f"{link.name}_c{count}"
                gm.addGeometryObject(pin.GeometryObject(name, joint_of[k], frame_of[k], pin.SE3(base @ pose), shape))
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
