"""Catalogues of module sets: every module alone with its connector frames, in the viewer or on a PNG sheet."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import networkx as nx
import numpy as np
import trimesh

from timor_core.viz.figure_files import save_figure
from timor_core.viz.render import Camera, Item, OffscreenRenderer, simplified
from timor_core.viz.scene import ROBOT_COLOR, add_mesh, wxyz_xyz
from timor_core.viz.shapes import concatenate_meshes, geometries_mesh

if TYPE_CHECKING:
    from timor_core.model.db import ModulesDB
    from timor_core.model.module import Module
    from timor_core.viz.viewer import Viewer

__all__ = ["ModuleView", "module_view", "show_db", "contact_sheet"]

CONNECTOR_COLOR = (200, 30, 30)


@dataclass
class ModuleView:
    """A module at q = 0 in its own frame (its first body's): one mesh and the pose of every connector."""

    module: Module
    mesh: trimesh.Trimesh | None
    connectors: dict[str, np.ndarray]

    @property
    def points(self) -> np.ndarray:
        """Points that the module spans (mesh vertices and connector origins)."""
        pts = [T[:3, 3] for T in self.connectors.values()]
        if self.mesh is not None:
            pts.extend(np.asarray(self.mesh.vertices))
        return np.array(pts).reshape(-1, 3) if pts else np.zeros((1, 3))


def module_view(module: Module) -> ModuleView:
    """Place a module's bodies and connectors (joints at zero) relative to its first body."""
    G = module.graph
    root = ("body", module.bodies[0].id)
    poses = {root: np.eye(4)}
    for u, v in nx.bfs_edges(G, root):
        poses[v] = poses[u] @ G.edges[u, v]["transform"]
    body_meshes = [geometries_mesh(b.visual or b.collision, poses[("body", b.id)]) for b in module.bodies]
    meshes = [m for m in body_meshes if m is not None]
    mesh = concatenate_meshes(meshes) if meshes else None
    connectors = {c.id: poses[("connector", c.id)] for b in module.bodies for c in b.connectors}
    return ModuleView(module, mesh, connectors)


def _size(view: ModuleView) -> float:
    pts = view.points
    return float(np.ptp(pts, axis=0).max()) if len(pts) > 1 else 0.1


def show_db(db: ModulesDB, viewer: Viewer) -> list[ModuleView]:
    """Lay every module of a set out on a grid in the viewer, connector frames drawn and labelled."""
    views = [module_view(m) for m in db]
    spacing = max([_size(v) for v in views] + [0.1]) * 1.5
    cols = max(1, math.ceil(math.sqrt(len(views))))
    server = viewer.server
    for k, view in enumerate(views):
        T = np.eye(4)
        T[:3, 3] = ((k % cols) * spacing, -(k // cols) * spacing, 0.0)
        wxyz, xyz = wxyz_xyz(T)
        name = f"/modules/{k}"
        server.scene.add_frame(name, show_axes=False, wxyz=wxyz, position=xyz)
        if view.mesh is not None:
            add_mesh(server, f"{name}/mesh", view.mesh, ROBOT_COLOR)
        top = view.points[:, 2].max() + 0.05 * spacing
        server.scene.add_label(f"{name}/title", f"{view.module.id}: {view.module.name}", position=(0.0, 0.0, top))
        length = 0.12 * spacing
        for i, (cid, C) in enumerate(view.connectors.items()):
            cw, cx = wxyz_xyz(C)
            frame = f"{name}/connector{i}"
            server.scene.add_frame(frame, axes_length=length, axes_radius=length / 20, wxyz=cw, position=cx)
            server.scene.add_label(f"{frame}/label", cid, font_screen_scale=0.8)
    return views


def _tile(renderer: OffscreenRenderer, view: ModuleView, radius: float | None = None) -> np.ndarray:
    items = []
    if view.mesh is not None:
        mesh = simplified(view.mesh)
        items.append(Item(np.asarray(mesh.vertices)[mesh.faces], ROBOT_COLOR))
    size = max(_size(view), 0.05)
    marker = trimesh.creation.icosphere(subdivisions=1, radius=0.04 * size)
    for C in view.connectors.values():
        items.append(Item(np.asarray(marker.vertices + C[:3, 3])[marker.faces], CONNECTOR_COLOR))
        axis = trimesh.creation.cylinder(radius=0.012 * size, height=0.25 * size, sections=8)
        axis.apply_translation((0, 0, 0.125 * size))
        axis.apply_transform(C)  # the connector's z axis (its mating direction)
        items.append(Item(np.asarray(axis.vertices)[axis.faces], (30, 30, 200)))
    labels = [(C[:3, 3], cid) for cid, C in view.connectors.items()]
    points = np.concatenate([view.points] + [i.triangles.reshape(-1, 3) for i in items])
    camera = Camera.fit(points, margin=1.25)
    if radius is not None:  # one scale for the whole sheet: sizes compare across tiles
        camera.radius = radius
    return renderer.render(items, camera, labels)


def contact_sheet(
    db: ModulesDB, path: str | Path, *, cols: int = 4, tile: int = 260, common_scale: bool = True
) -> Path:
    """Write a PNG (or SVG) sheet of every module of a set: mesh, connectors (red, z axis blue) and their IDs.

    ``common_scale``: every tile at the scale of the largest module, so sizes compare at a glance (False: each
    module fills its tile).
    """
    from matplotlib.figure import Figure

    views = [module_view(m) for m in db]
    cols = max(1, min(cols, len(views)))
    rows = max(1, math.ceil(len(views) / cols))
    renderer = OffscreenRenderer(tile, tile)
    figure = Figure(figsize=(cols * tile / 100, rows * (tile + 30) / 100), dpi=100)
    figure.suptitle(f"module set {db.name!r}: {len(views)} modules")
    radius = None
    if common_scale:
        radius = max(Camera.fit(v.points, margin=1.25).radius for v in views if len(v.points)) if views else None
    for k, view in enumerate(views):
        ax = figure.add_subplot(rows, cols, k + 1)
        ax.imshow(_tile(renderer, view, radius))
        m = view.module
        name = m.name if len(m.name) <= 28 else m.name[:27] + "…"
        ax.set_title(f"{m.id} · {m.dof} DOF · {m.mass:.2f} kg\n{name}", fontsize=7.5)
        ax.set_axis_off()
    renderer.close()
    return save_figure(figure, path, dpi=100)
