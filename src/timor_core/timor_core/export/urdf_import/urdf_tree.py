"""The link tree of a URDF for the importer: the checks that its links form one tree (each error naming the URDF
file and the link or joint) and the guess of the tool link.

Both are linear in the number of links: whole-list checks first, the joint-by-joint search for the culprit only on
an error; one walk from the root.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from timor_core.errors import ValidationError
from timor_core.export.urdf_import.urdf_reader import UrdfJoint
from timor_core.limits import limits

__all__ = ["TOOL_NAMES", "UrdfTree", "check_tree", "guess_tool_link"]


@dataclass
class UrdfTree:
    """The links' tree: the root, each link's children, every link with parents before children."""

    root: str
    children: dict[str, list[str]]
    order: list[str]


def check_tree(links: Sequence[str], joints: Sequence[UrdfJoint], file: Path | None) -> UrdfTree:
    """The links' tree, after checking that they form one: unique names, every joint between two links that exist,
    each link the child of at most one joint, one root, every link below it (no cycle). Linear in the number of
    links and joints: the checks run on whole lists first, the joint-by-joint search for the culprit only on an
    error."""
    if not links:
        raise ValidationError("a URDF needs at least one <link>", file=file)
    names = [j.name for j in joints]
    parents = [j.parent for j in joints]
    childs = [j.child for j in joints]
    longest = limits().max_string_chars
    if max(map(len, links)) > longest or max(map(len, names), default=0) > longest:
        for kind, some in (("link", links), ("joint", names)):
            for name in some:
                if len(name) > longest:
                    raise ValidationError(f"a {kind} name longer than {longest} characters (max_string_chars)",
                                          file=file, path=f"{kind}[@name]", value=name)  # fmt: skip
    seen = set(links)
    if len(seen) != len(links) or "" in seen:
        _find_bad_link(links, file)
    unique, has_parent = set(names), set(childs)
    if (len(unique) != len(names) or "" in unique or not seen.issuperset(parents) or not has_parent <= seen
            or len(has_parent) != len(childs) or any(map(operator.eq, parents, childs))):  # fmt: skip
        _find_bad_joint(joints, seen, file)
    children: dict[str, list[str]] = {}
    for parent, child in zip(parents, childs):
        if parent in children:
            children[parent].append(child)
        else:
            children[parent] = [child]
    roots = list(seen.difference(has_parent))
    if len(roots) > 1:  # in file order, for the message
        roots = [n for n in links if n not in has_parent]
    if not roots:
        raise ValidationError("every link is some joint's child: the joints form a cycle", file=file,
                              path=f"link[@name='{links[0]}']", value=list(links[:5]))  # fmt: skip
    if len(roots) > 1:
        raise ValidationError("a URDF needs exactly one root link (a link that is no joint's child)", file=file,
                              value=roots[:10])  # fmt: skip
    order = [roots[0]]
    for link in order:  # grows while it is walked: every link below the root, parents first (no cycle can loop it)
        order.extend(children.get(link, ()))
        if len(order) > len(links):
            break
    if len(order) != len(links):
        reached = set(order)
        cut = [n for n in links if n not in reached]
        raise ValidationError("these links hang in a cycle of joints, not below the root", file=file,
                              path=f"link[@name='{cut[0]}']", value=cut[:10])  # fmt: skip
    return UrdfTree(roots[0], children, order)


def _find_bad_link(links: Sequence[str], file: Path | None) -> None:
    seen: set[str] = set()
    for name in links:
        if name in seen or not name:
            raise ValidationError("two links have this name" if name else "a link needs a name", file=file,
                                  path=f"link[@name='{name}']", value=name)  # fmt: skip
        seen.add(name)


def _find_bad_joint(joints: Sequence[UrdfJoint], links: set[str], file: Path | None) -> None:
    """Raise the error of the first joint (in file order) that breaks the tree."""
    parent_joint: dict[str, str] = {}
    joint_names: set[str] = set()
    for j in joints:
        path = f"joint[@name='{j.name}']"
        if j.name in joint_names or not j.name:
            raise ValidationError("two joints have this name" if j.name else "a joint needs a name", file=file,
                                  path=path, value=j.name)  # fmt: skip
        joint_names.add(j.name)
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in links:
                raise ValidationError(f"its {role} link is not a link of the URDF", file=file,
                                      path=f"{path}/{role}@link", value=link)  # fmt: skip
        if j.parent == j.child:
            raise ValidationError("a joint cannot join a link to itself", file=file, path=f"{path}/child@link",
                                  value=j.child)  # fmt: skip
        if j.child in parent_joint:
            raise ValidationError(f"link {j.child!r} is the child of two joints ({parent_joint[j.child]!r} and "
                                  f"{j.name!r}); a URDF must be a tree", file=file, path=f"{path}/child@link",
                                  value=j.child)  # fmt: skip
        parent_joint[j.child] = j.name


#: Link names that say "tool frame", best first (regular expressions, lower case): the TCP guess prefers them.
TOOL_NAMES = (r"tool0", r"(.*_)?tcp", r"(.*_)?end_?effector(_link)?", r"(.*_)?ee_link", r"(.*_)?flange")
# one scan over all names joined by NUL (a character no XML name can hold); group k matches pattern k
_NAME_CHAR = "[^\x00\n]"  # what ``.`` matches within one name
_TOOL_SCAN = re.compile(
    "(?:^|(?<=\x00))(?:"
    + "|".join("(" + p.replace("(", "(?:").replace(".", _NAME_CHAR) + ")" for p in TOOL_NAMES)
    + ")(?=\x00|$)",
    re.IGNORECASE,
)


def guess_tool_link(tree: UrdfTree, actuated: Mapping[str, bool], names: Sequence[str]) -> str:
    """The tool link: a link named like a tool frame (``TOOL_NAMES``, best pattern first; among several, one on
    or below the main chain, else the first in ``names``, the links in file order), else the end of the main
    chain: from the root into the child with the most moving joints below it (``actuated``: whether a link's joint
    moves), stopping where equal branches with joints split (a hand's fingers)."""
    children = tree.children
    chain = tree.order if max(map(len, children.values()), default=0) <= 1 else _main_chain(tree, actuated)
    under = [chain[-1]]  # everything below the end of the main chain
    for link in under:
        under.extend(children.get(link, ()))
    by_rank: dict[int, list[str]] = {}  # the names matching each pattern (the first that matches), in order
    for match in _TOOL_SCAN.finditer("\x00".join(names)):
        if match.lastindex is not None:
            by_rank.setdefault(match.lastindex, []).append(match.group(0))
    if by_rank:
        matches = by_rank[min(by_rank)]
        preferred = set(chain).union(under)
        return next((n for n in matches if n in preferred), matches[0])
    return chain[-1]


def _main_chain(tree: UrdfTree, actuated: Mapping[str, bool]) -> list[str]:
    """From the root into the child with the most moving joints below it, to a leaf or a split of equal branches."""
    children = tree.children
    below: dict[str, int] = {}  # moving joints at and below each link
    for link in reversed(tree.order):
        total = 1 if actuated.get(link, False) else 0
        for child in children.get(link, ()):
            total += below[child]
        below[link] = total
    chain = [tree.root]
    while kids := children.get(chain[-1]):
        if len(kids) > 1:
            best = max(below[k] for k in kids)
            kids = [k for k in kids if below[k] == best]
            if len(kids) != 1:
                break
        chain.append(kids[0])
    return chain
