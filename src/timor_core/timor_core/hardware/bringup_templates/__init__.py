"""The launch files of a generated bring-up package: real Python files, copied as they are into its ``launch/``
folder (``write_bringup``) beside ``bringup.yaml``, the data they read at launch (package, robot, distro, the
route's driver packages, the xacro arguments). They validate their arguments with
``timor_core.ros.launch_arguments`` (so the package needs timor_core where it runs) and start only ROS nodes.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["TEMPLATES", "template_files"]

#: the folder of the templates
TEMPLATES = Path(__file__).resolve().parent


def template_files(route: str) -> dict[str, Path]:
    """Launch file name -> template of a route's package (``sim.launch.py`` only for the gazebo route)."""
    names = ["view", "control", "moveit"] + (["sim"] if route == "gazebo" else [])
    return {f"{name}.launch.py": TEMPLATES / f"{name}.launch.py" for name in names}
