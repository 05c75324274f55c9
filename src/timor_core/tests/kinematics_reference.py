"""An independent, deliberately naive forward kinematics of an assembly, straight from the CoBRA
definitions, used to check the generated models. It walks module bodies, joints and connectors and
never looks at the kinematic tree the library builds."""

from __future__ import annotations

import numpy as np

from timor_core.common.transforms import ROT_X_PI, inv, rot_z, translation


def motion(joint_type: str, q: float) -> np.ndarray:
    if joint_type in ("revolute", "continuous"):
        return rot_z(q)
    if joint_type == "prismatic":
        return translation((0.0, 0.0, q))
    return np.eye(4)


def body_poses(assembly, q_of: dict[tuple[int, str], float]) -> dict[tuple[int, str], np.ndarray]:
    """World pose of every body ``(instance, body_id)``; ``q_of[(instance, joint_id)]`` gives joint values."""
    modules = assembly.modules
    partner = {}
    for i, ci, j, cj in assembly.connections:
        partner[(i, ci)] = (j, cj)
        partner[(j, cj)] = (i, ci)
    bi, bc = assembly.base_connector
    c = modules[bi].connectors[bc]
    poses = {(bi, c.body_id): assembly.base_placement @ ROT_X_PI @ inv(c.pose)}
    stack = [(bi, c.body_id)]
    while stack:
        inst, bid = stack.pop()
        T = poses[(inst, bid)]
        module = modules[inst]
        for j in module.joints:
            qj = q_of.get((inst, j.id), 0.0)
            if j.parent == bid and (inst, j.child) not in poses:
                poses[(inst, j.child)] = T @ j.pose_parent @ motion(j.type, qj) @ j.pose_child
                stack.append((inst, j.child))
            elif j.child == bid and (inst, j.parent) not in poses:
                poses[(inst, j.parent)] = T @ inv(j.pose_parent @ motion(j.type, qj) @ j.pose_child)
                stack.append((inst, j.parent))
        for conn in module.body[bid].connectors:
            other = partner.get((inst, conn.id))
            if other is None:
                continue
            oc = modules[other[0]].connectors[other[1]]
            key = (other[0], oc.body_id)
            if key not in poses:
                poses[key] = T @ conn.pose @ ROT_X_PI @ inv(oc.pose)
                stack.append(key)
    return poses


def q_map(assembly, q: np.ndarray) -> dict[tuple[int, str], float]:
    """Joint values keyed by (instance, joint id), in the robot's configuration order."""
    actuated = assembly.tree().actuated
    assert len(actuated) == len(q)
    return {(link.instance, link.joint.id): float(v) for link, v in zip(actuated, q)}


def tool_poses(assembly, q: np.ndarray) -> list[np.ndarray]:
    """World poses of the free eef connectors, in module order."""
    poses = body_poses(assembly, q_map(assembly, q))
    used = {(i, c) for i, ci, j, cj in assembly.connections for (i, c) in ((i, ci), (j, cj))}
    out = []
    for inst, module in enumerate(assembly.modules):
        for c in module.eef_connectors:
            if (inst, c.id) not in used:
                out.append(poses[(inst, c.body_id)] @ c.pose)
    return out


def generalized_gravity(assembly, q: np.ndarray, g: float = 9.81) -> np.ndarray:
    """Holding torques from first principles: tau_k = -axis_k · Σ_downstream (r_com - p_k) × m g."""
    qm = q_map(assembly, q)
    poses = body_poses(assembly, qm)
    actuated = assembly.tree().actuated
    tau = np.zeros(len(actuated))
    gravity = np.array([0.0, 0.0, -g])
    # the joint frame of (inst, joint) in the world, and which bodies are downstream (towards the tips)
    for k, link in enumerate(actuated):
        inst, j = link.instance, link.joint
        child_is_downstream = not _entered_from_child(assembly, link)
        near = j.parent if child_is_downstream else j.child
        T_near = poses[(inst, near)]
        if child_is_downstream:
            T_joint = T_near @ j.pose_parent
        else:
            T_joint = T_near @ inv(j.pose_child) @ inv(motion(j.type, qm[(inst, j.id)]))
        # a joint walked backwards moves its downstream side by -q
        axis, origin = T_joint[:3, 2] * (1.0 if child_is_downstream else -1.0), T_joint[:3, 3]
        for key in _downstream_bodies(assembly, link):
            body = assembly.modules[key[0]].body[key[1]]
            com = poses[key][:3, :3] @ body.r_com + poses[key][:3, 3]
            force = body.mass * gravity
            if j.type == "prismatic":
                tau[k] -= axis @ force
            else:
                tau[k] -= axis @ np.cross(com - origin, force)
    return tau


def _entered_from_child(assembly, link) -> bool:
    tree = assembly.tree()
    parent_body = tree.links[link.parent].body.id
    return parent_body == link.joint.child


def _downstream_bodies(assembly, link) -> list[tuple[int, str]]:
    tree = assembly.tree()
    start = tree.links.index(link)
    children: dict[int, list[int]] = {}
    for idx, other in enumerate(tree.links):
        if other.parent is not None:
            children.setdefault(other.parent, []).append(idx)
    out, stack = [], [start]
    while stack:
        idx = stack.pop()
        out.append((tree.links[idx].instance, tree.links[idx].body.id))
        stack.extend(children.get(idx, []))
    return out
