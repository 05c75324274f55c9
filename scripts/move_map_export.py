"""The move map of issue 39, item 1: ``timor_core/export/`` split by concern, and the one rewrite of every reference.

``export/`` held four concerns in one folder. They now live in

* ``timor_core/export/formats/``     files for other tools (URDF and its parts, xacro, SRDF, MJCF, ros2_control,
                                     MoveIt config, RViz config, planning scene, YAML text, each distro's layout)
* ``timor_core/export/urdf_import/`` a URDF read back as a module (``urdf_import.py`` is ``importer.py`` there)
* ``timor_core/ros/``                the running ROS 2 system without rclpy (launch arguments, robot descriptions,
                                     the supervised ros2_control_node and move_group processes)
* ``timor_core/hardware/``           real robots: hardware profiles (``hardware.py`` is ``profiles.py`` there),
                                     EDS/CANopen/EtherCAT, bus discovery, bring-up packages and their templates

Usage (from a repository root; the lead runs the second form on a branch made before the split, then merges)::

    python scripts/move_map_export.py --git-mv .          # do the moves with git mv (once, on the old layout)
    python scripts/move_map_export.py PATH...             # rewrite references old -> new in these files/folders
    python scripts/move_map_export.py --check PATH...     # list the files that still name an old place (exit 1)
    python scripts/move_map_export.py --ruff .venv/bin/ruff PATH...   # rewrite, then sort the imports and format

A file that another branch added to ``export/`` is not in the map: after the merge it still sits in ``export/``;
``git mv`` it to the package of its concern (and add it to MOVES if other branches import it).

The new names sort differently (``timor_core.hardware`` after ``timor_core.export.formats``), so the rewritten Python
files need ruff's import sorting (``--ruff``); a docstring line that the longer names push past 120 characters is
reported by ``ruff check`` (E501) and is wrapped by hand.

The rewrite is textual and touches dotted module names (``timor_core.export.urdf_reader`` in imports, strings for
``monkeypatch``/``mock.patch``, docstrings), file paths (``timor_core/export/urdf.py``, ``export/urdf.py``) and, in
Markdown only, the short dotted names of the docs (```export.urdf```). Run it once on a tree of the old layout:
a new name is never rewritten again, except the bare package name ``timor_core.export.urdf_import``, which the
old layout's module of that name becomes (``...urdf_import.importer``).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import move_map_tool  # beside this script (scripts/)

FORMATS = (
    "urdf", "urdf_walk", "urdf_parts", "urdf_options", "xacro", "srdf", "mjcf", "ros2_control", "moveit_config",
    "yaml_text", "rviz_config", "planning_scene", "ros_distro", "urdfdom",
)  # fmt: skip
URDF_IMPORT = ("urdf_reader", "urdf_build", "urdf_tree", "urdf_numbers")
ROS = (
    "launch_arguments", "launch_paths", "robot_description", "controller_swap", "manager_process",
    "move_group_process", "plugin_index",
)  # fmt: skip
HARDWARE = (
    "bringup", "bringup_routes", "bringup_templates", "eds", "eds_text", "canopen_bus", "canopen_pdo",
    "canopen_units", "canopen_sim", "discover", "ethercat_config",
)  # fmt: skip

#: old module under timor_core.export -> new module under timor_core
MOVES: dict[str, str] = {
    **{m: f"export.formats.{m}" for m in FORMATS},
    "urdf_import": "export.urdf_import.importer",
    **{m: f"export.urdf_import.{m}" for m in URDF_IMPORT},
    **{m: f"ros.{m}" for m in ROS},
    "hardware": "hardware.profiles",
    **{m: f"hardware.{m}" for m in HARDWARE},
}
#: the new packages, each with an __init__ (bringup_templates moves with its own)
PACKAGES = ("export/formats", "export/urdf_import", "ros", "hardware")

_NAMES = "|".join(sorted(MOVES, key=len, reverse=True))
# after an old name, a new name may continue with a submodule of the new urdf_import package: never rewrite that
_NEW_SUB = "|".join(["importer", *URDF_IMPORT])
_NOT_NEW = rf"(?!\w)(?!\.(?:{_NEW_SUB})\b)(?!/(?:{_NEW_SUB})\.py)"
DOTTED = re.compile(rf"\btimor_core\.export\.({_NAMES}){_NOT_NEW}")
# a path to the old urdf_import is the file urdf_import.py; urdf_import/ is the new folder
PATHS = re.compile(rf"(?<![\w.])((?:timor_core/)?)export/({_NAMES}){_NOT_NEW}(?!(?<=urdf_import)(?:/|\.(?!py\b)))")
SHORT = re.compile(rf"(?<![\w./])export\.({_NAMES}){_NOT_NEW}")  # Markdown only: `export.urdf`


def rewrite(text: str, markdown: bool = False) -> str:
    """The text with every reference to an old place of export/ replaced by the new one."""
    text = DOTTED.sub(lambda m: f"timor_core.{MOVES[m.group(1)]}", text)
    text = PATHS.sub(lambda m: f"{m.group(1)}{MOVES[m.group(2)].replace('.', '/')}", text)
    if markdown:
        text = SHORT.sub(lambda m: MOVES[m.group(1)], text)
    return text


def git_mv(root: Path) -> None:
    """Move the files of timor_core/export/ to their new packages with git mv (history kept)."""
    pkg = root / "src" / "timor_core" / "timor_core"
    for folder in PACKAGES:
        (pkg / folder).mkdir(parents=True, exist_ok=True)
    for old, new in MOVES.items():
        source = pkg / "export" / (old if old == "bringup_templates" else f"{old}.py")
        target = pkg / (new.replace(".", "/") + ("" if old == "bringup_templates" else ".py"))
        subprocess.run(["git", "mv", str(source), str(target)], cwd=root, check=True)


def main(argv: list[str] | None = None) -> int:
    return move_map_tool.main(argv, __doc__, rewrite, git_mv, skip=frozenset())


if __name__ == "__main__":
    sys.exit(main())
