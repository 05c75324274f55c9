"""SRDF export for MoveIt: a planning group, a home state, an end effector and the collision matrix.

The collision matrix is computed as the MoveIt Setup Assistant does, over every pair of links with
collision geometry: pairs joined by a joint are "Adjacent", pairs in collision at the home state are
"Default", pairs in collision in every random sample are "Always" and pairs never in collision over
``n_samples`` random configurations are "Never". All of them are disabled; every other pair (one that
collided in some sample) stays checked. The robot's coal collision model does the checking.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pinocchio as pin

from timor_core.common.names import check_name, name_attr, xml_escape
from timor_core.common.names import format_number as _num
from timor_core.errors import AssemblyError, InputError
from timor_core.export.formats.ros2_control import commanded, home_position
from timor_core.export.formats.urdf import default_robot_name
from timor_core.kinematics.collision import configure_requests
from timor_core.limits import check_int
from timor_core.model.tree import KinematicTree

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "REASONS",
    "DisabledCollision",
    "PlanningChain",
    "planning_chain",
    "planning_groups",
    "collision_matrix",
    "assembly_to_srdf",
]

REASONS = ("Adjacent", "Default", "Always", "Never", "User")
"""Why a link pair is not checked, in the order they are written (the Setup Assistant's names)."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class DisabledCollision:
    """A link pair MoveIt need not check, and why."""

    link1: str
    link2: str
    reason: str


@dataclass(frozen=True)
class PlanningChain:
    """The serial chain MoveIt plans for: its end links and its movable joints, base first."""

    base_link: str
    tip_link: str
    joints: tuple[str, ...]  # every movable joint of the chain (URDF names)
    commanded: tuple[str, ...]  # the joints among them that are driven (not passive)
    has_tool: bool  # True if the tip is a tool frame (tool0)
    hand: tuple[str, ...] = ()  # movable joints that branch off the chain's last body (a gripper's fingers)


def _chain_to(tree: KinematicTree, tip_index: int, tip_name: str, has_tool: bool) -> tuple[PlanningChain, list[int]]:
    """The chain from the root to ``tip_index``, and the movable links neither on it nor in its hand."""
    links = tree.links
    on_path = set()
    k: int | None = tip_index
    while k is not None:
        on_path.add(k)
        k = links[k].parent
    last_movable = max((k for k in on_path if links[k].joint_type != "fixed"), default=0)
    end_body = {k for k in on_path if k >= last_movable}  # the chain's last body: rigidly after its last joint
    hand: list[int] = []
    off: list[int] = []
    for k, link in enumerate(links):
        if link.joint_type == "fixed" or k in on_path:
            continue
        j = k
        while j not in on_path:
            j = links[j].parent  # type: ignore[assignment]  # the root is on the path
        (hand if j in end_body else off).append(k)
    chain = [link for k, link in enumerate(links) if link.joint_type != "fixed" and k in on_path]
    joints = tuple(link.movable_joint_name() for link in chain)
    driven = tuple(link.movable_joint_name() for link in chain if commanded(link))
    fingers = tuple(links[k].movable_joint_name() for k in hand)
    return PlanningChain(links[0].name, tip_name, joints, driven, has_tool, fingers), off


def planning_chain(assembly: ModuleAssembly, prefix: str = "") -> PlanningChain:
    """The chain from ``base_link`` to ``tool0`` (or, without a tool frame, to the last link).

    Movable joints branching off the chain's last body (a gripper's fingers) are its ``hand``; AssemblyError if
    the robot has no movable joint or another movable joint is off that chain.
    """
    tree = assembly.tree(prefix)
    links = tree.links
    if not tree.actuated:
        raise AssemblyError("the robot has no movable joint: there is nothing for MoveIt to plan")
    if tree.tools:
        chain, off = _chain_to(tree, tree.tools[0].link, tree.tools[0].name, True)
    else:
        chain, off = _chain_to(tree, len(links) - 1, links[-1].name, False)
    if off:
        names = [links[k].joint_name for k in off]
        raise AssemblyError(
            f"SRDF export needs a serial robot: joints {names} are not on the chain {links[0].name} -> {chain.tip_link}"
        )
    return chain


def planning_groups(
    assembly: ModuleAssembly, prefix: str = "", group: str = "manipulator"
) -> tuple[tuple[str, PlanningChain], ...]:
    """MoveIt's planning groups: ``group`` for a serial robot (``planning_chain``); for a robot with several tool
    frames (arms on one base), one chain per tool, ``<group>_1``, ``<group>_2``, ... in tool order. AssemblyError if
    a movable joint is on no chain and in no hand (a branch that ends in no tool)."""
    tree = assembly.tree(prefix)
    if len(tree.tools) < 2:
        return ((group, planning_chain(assembly, prefix)),)
    chains = [_chain_to(tree, tool.link, tool.name, True)[0] for tool in tree.tools]
    covered = {j for c in chains for j in (*c.joints, *c.hand)}
    loose = [link.joint_name for link in tree.actuated if link.joint_name not in covered]
    if loose:
        raise AssemblyError(f"MoveIt's planning groups end in tool frames: joints {loose} lead to no tool")
    return tuple((f"{group}_{k + 1}", chain) for k, chain in enumerate(chains))


def _adjacent(tree: KinematicTree, has_geometry: list[bool]) -> set[tuple[int, int]]:
    """Link pairs joined by a joint; links without geometry are bridged (their neighbours are adjacent)."""
    n = len(tree.links)
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for k, link in enumerate(tree.links):
        if link.parent is not None:
            neighbours[k].add(link.parent)
            neighbours[link.parent].add(k)
    for k in range(n):
        if has_geometry[k]:
            continue
        around = sorted(neighbours[k])
        for a in around:
            neighbours[a].update(b for b in around if b != a)
    return {(a, b) for a in range(n) for b in neighbours[a] if a < b and has_geometry[a] and has_geometry[b]}


def _link_geometries(robot: Any, names: list[str]) -> tuple[pin.GeometryModel, list[list[int]]]:
    """A geometry model of the robot's collision objects, and the objects of each link (by tree index)."""
    index = {name: k for k, name in enumerate(names)}
    geoms: list[list[int]] = [[] for _ in names]
    gm = pin.GeometryModel()
    for g, obj in enumerate(robot.collision.geometryObjects):
        geoms[index[robot.model.frames[obj.parentFrame].name]].append(g)
        gm.addGeometryObject(obj)
    return gm, geoms


class _PairChecker:
    """Which candidate link pairs collide at a configuration (every geometry pair of the two links counts).

    A broad phase of our own: only pairs whose world-aligned bounding boxes overlap go to the narrow phase (an
    overlap is necessary for a collision, so the verdicts are the same; much faster for long robots).
    """

    def __init__(
        self,
        robot: Any,
        gm: pin.GeometryModel,
        geoms: list[list[int]],
        candidates: list[tuple[int, int]],
        clearance: float = 0.0,
    ):

        pair_of: list[int] = []  # geometry pair index -> candidate index
        for c, (a, b) in enumerate(candidates):
            for ga in geoms[a]:
                for gb in geoms[b]:
                    gm.addCollisionPair(pin.CollisionPair(ga, gb))
                    pair_of.append(c)
        self.gm, self.gd = gm, pin.GeometryData(gm)
        configure_requests(self.gd, clearance, model=gm)  # a pair closer than ``clearance`` counts as colliding
        self.clearance = clearance
        self.model, self.data = robot.model, robot.model.createData()
        self.cand_of_pair = np.array(pair_of, dtype=int)
        self.n_cand = len(candidates)
        boxes = [o.geometry.aabb_local for o in gm.geometryObjects]
        self.centre = np.array([0.5 * (np.asarray(b.min_) + np.asarray(b.max_)) for b in boxes]).reshape(-1, 3)
        self.half = np.array([0.5 * (np.asarray(b.max_) - np.asarray(b.min_)) for b in boxes]).reshape(-1, 3)
        self.first = np.array([cp.first for cp in gm.collisionPairs], dtype=int)
        self.second = np.array([cp.second for cp in gm.collisionPairs], dtype=int)

    def colliding(self, q: np.ndarray, undecided: np.ndarray) -> np.ndarray:
        """Boolean mask of the candidates (among ``undecided``) that collide at q.

        Only the geometry pairs of undecided candidates are boxed, and the narrow phase runs on them in pair order.
        """
        hit = np.zeros(self.n_cand, dtype=bool)
        live = np.flatnonzero(undecided[self.cand_of_pair])
        if not len(live):
            return hit
        gm, gd = self.gm, self.gd
        pin.updateGeometryPlacements(self.model, self.data, gm, gd, q)
        first, second = self.first[live], self.second[live]
        placed = np.array([M.homogeneous for M in gd.oMg])  # one copy per geometry (its rotation and translation)
        R, t = np.ascontiguousarray(placed[:, :3, :3]), np.ascontiguousarray(placed[:, :3, 3])
        c = np.einsum("gij,gj->gi", R, self.centre) + t
        e = np.einsum("gij,gj->gi", np.abs(R), self.half)
        overlap = np.all(np.abs(c[first] - c[second]) <= e[first] + e[second] + self.clearance + 1e-9, axis=1)
        cand_of_pair, found = self.cand_of_pair, set()
        for p in live[overlap].tolist():
            k = int(cand_of_pair[p])
            if k not in found and pin.computeCollision(gm, gd, p):
                found.add(k)
        hit[list(found)] = True
        return hit


def _sampled(checker: _PairChecker, robot: Any, free: np.ndarray, n_samples: int, seed: int) -> tuple[set, set]:
    """The candidates in collision in every sample ("Always") and in none ("Never"), of the ``free`` ones."""
    always = free.copy()  # collided in every sample so far
    never = free.copy()  # no collision in any sample so far
    rng = np.random.default_rng(seed)
    for _ in range(int(n_samples)):
        undecided = always | never
        if not undecided.any():
            break
        hit = checker.colliding(robot.random_configuration(rng), undecided)
        always &= hit
        never &= ~hit
    return {int(k) for k in np.flatnonzero(always)}, {int(k) for k in np.flatnonzero(never)}


NEVER_CLEARANCE = 0.02
"""A pair timor checks is disabled as "Never" only if it never came closer than this (m) in any sample."""


def _checked_by_timor(robot: Any, geoms: list[list[int]]) -> set[tuple[int, int]]:
    """The link pairs (tree indices, a < b) timor's own self-collision check looks at (the set's ignore mode)."""
    link_of = {g: k for k, gs in enumerate(geoms) for g in gs}
    robot.collision_pairs  # noqa: B018  (sets the robot's pairs from the module set's ignore mode)
    pairs = set()
    for cp in robot.collision.collisionPairs:
        a, b = link_of[cp.first], link_of[cp.second]
        pairs.add((min(a, b), max(a, b)))
    return pairs


def collision_matrix(
    assembly: ModuleAssembly, *, prefix: str = "", n_samples: int = 1000, seed: int = 0
) -> list[DisabledCollision]:
    """The link pairs to disable, with their reasons, in tree order (deterministic for a seed).

    The pairs MoveIt keeps checking are exactly those timor's self-collision check looks at and that may collide:
    a pair timor checks is never disabled for colliding at home ("Default") or always ("Always": timor reports
    those), and is "Never" only if no sample brought it within ``NEVER_CLEARANCE``; a pair timor does not check
    (the module set's ``ignore_collisions``) is always disabled, as "User" if no other reason applies. Random
    configurations are uniform within the joint limits ([-π, π] without limits).
    """
    n_samples = check_int(n_samples, "n_samples", 1, "max_samples")
    robot = assembly.to_pin_robot(prefix=prefix)
    tree = assembly.tree(prefix)
    names = [link.name for link in tree.links]
    gm, geoms = _link_geometries(robot, names)
    checked = _checked_by_timor(robot, geoms)
    has_geometry = [bool(g) for g in geoms]
    reason: dict[tuple[int, int], str] = dict.fromkeys(_adjacent(tree, has_geometry), "Adjacent")
    candidates = [
        (a, b)
        for a in range(len(names))
        for b in range(a + 1, len(names))
        if has_geometry[a] and has_geometry[b] and (a, b) not in reason
    ]
    is_checked = np.array([c in checked for c in candidates], dtype=bool)
    checker = _PairChecker(robot, gm, geoms, candidates)
    home = np.array([home_position(link) for link in tree.actuated])
    at_home = checker.colliding(home, np.ones(len(candidates), dtype=bool)) & ~is_checked
    for c_home in np.flatnonzero(at_home):
        reason[candidates[int(c_home)]] = "Default"
    always_set, _ = _sampled(checker, robot, ~at_home & ~is_checked, n_samples, seed)
    for c_always in sorted(always_set):
        reason[candidates[c_always]] = "Always"
    gm_near, _ = _link_geometries(robot, names)
    near_checker = _PairChecker(robot, gm_near, geoms, candidates, NEVER_CLEARANCE)
    free = ~at_home & np.array([candidates[k] not in reason for k in range(len(candidates))], dtype=bool)
    _, never_set = _sampled(near_checker, robot, free, n_samples, seed)
    for c_never in sorted(never_set):
        reason[candidates[c_never]] = "Never"
    for k, pair in enumerate(candidates):
        if not is_checked[k] and pair not in reason:
            reason[pair] = "User"
    order = {r: k for k, r in enumerate(REASONS)}
    ranked = sorted(reason.items(), key=lambda item: (order[item[1]], item[0]))
    return [DisabledCollision(names[a], names[b], r) for (a, b), r in ranked]


def _group_xml(tree: KinematicTree, group: str, chain: PlanningChain) -> list[str]:
    """A group along ``chain``, its ``home`` state and, with a tool frame, its end effector group."""
    tip = name_attr(chain.tip_link)
    out = [f'  <group name="{group}">\n', f'    <chain base_link="{name_attr(chain.base_link)}" tip_link="{tip}"/>\n',
           "  </group>\n"]  # fmt: skip
    eef = f"{group}_eef"
    if chain.has_tool:
        fingers = "".join(f'    <joint name="{name_attr(j)}"/>\n' for j in chain.hand)
        out.append(f'  <group name="{eef}">\n    <link name="{tip}"/>\n{fingers}  </group>\n')
    for state_group, members in ((group, chain.joints), (eef, chain.hand if chain.has_tool else ())):
        if members:
            out.append(f'  <group_state name="home" group="{state_group}">\n')
            out.extend(f'    <joint name="{name_attr(str(link.joint_name))}" value="{_num(home_position(link))}"/>\n'
                       for link in tree.actuated if link.joint_name in members)  # fmt: skip
            out.append("  </group_state>\n")
    if chain.has_tool:
        out.append(f'  <end_effector name="{eef}" parent_link="{tip}" group="{eef}" parent_group="{group}"/>\n')
    return out


def assembly_to_srdf(
    assembly: ModuleAssembly,
    *,
    name: str | None = None,
    prefix: str = "",
    n_samples: int = 1000,
    seed: int = 0,
    group: str = "manipulator",
) -> str:
    """The SRDF of an assembly for MoveIt (names as ``assembly_to_urdf``'s): its planning groups (``planning_groups``:
    ``group`` for a serial robot, a hand may branch off its end; one group per tool frame for arms on one base).

    Each group is a chain ``base_link`` → its tool; ``home`` puts every joint at zero clipped into its limits; with a
    tool frame, group ``<group>_eef`` (the tool link and the hand's joints, with its own ``home``) is the end
    effector on it. Passive joints are declared passive. See ``collision_matrix`` for the disabled pairs.
    """
    if not isinstance(group, str) or not _NAME.fullmatch(group):
        raise InputError("the group name must be letters, digits and underscores", value=group)
    groups = planning_groups(assembly, prefix, group)
    tree = assembly.tree(prefix)
    robot_name = check_name(name, "robot name") if name is not None else default_robot_name(assembly)
    out = [
        '<?xml version="1.0"?>\n',
        "<!-- Semantic robot description for MoveIt, written by timor (pairs of links: see the reasons) -->\n",
        f'<robot name="{xml_escape(robot_name)}">\n',
    ]
    for group_name, chain in groups:
        out.extend(_group_xml(tree, group_name, chain))
    base_link = groups[0][1].base_link
    if np.array_equal(assembly.base_placement, np.eye(4)) and base_link != "world":  # (UR's root is world)
        out.append(
            f'  <virtual_joint name="{prefix}virtual_joint" type="fixed" parent_frame="world"'
            f' child_link="{name_attr(base_link)}"/>\n'
        )
    out.extend(f'  <passive_joint name="{name_attr(str(link.joint_name))}"/>\n'
               for link in tree.actuated if not commanded(link))  # fmt: skip
    for d in collision_matrix(assembly, prefix=prefix, n_samples=n_samples, seed=seed):
        link1, link2 = name_attr(d.link1), name_attr(d.link2)
        out.append(f'  <disable_collisions link1="{link1}" link2="{link2}" reason="{d.reason}"/>\n')
    out.append("</robot>\n")
    return "".join(out)
