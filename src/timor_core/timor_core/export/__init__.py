"""The export layer: URDF, xacro, SRDF, ros2_control, MoveIt configurations, MJCF, URDF import and the
description bundles the ROS 2 nodes publish. Each exporter takes an assembly; the model imports none of them."""
