"""Files for other tools, made from an assembly, and a URDF read back as a module: :mod:`.formats` (one writer per
format: URDF, xacro, SRDF, MJCF, ros2_control, MoveIt config, RViz config, planning scene) and :mod:`.urdf_import`.
The model reaches them only through the delegations of docs/architecture.md (``assembly.to_urdf()``, ...).

May import from timor_core: errors, limits, common, model, kinematics, task, export.
"""
