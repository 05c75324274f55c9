"""The running ROS 2 system, without rclpy: what timor_ros's nodes and launch files (and the launch files of
generated bring-up packages) call. The one validation of every launch file's arguments (``launch_arguments``,
``launch_checks``, ``launch_paths``), the robot description an assembly node publishes (``robot_description``), a
running ros2_control taking a new robot (``controller_swap``: a standby, the service sequence, the old manager's
release; ``manager_process``: one supervised ros2_control_node; ``plugin_index``: the plugin libraries a standby
preloads) and MoveIt's move_group restarted per robot (``move_group_process``).

May import from timor_core: errors, limits, common, model, task, export.formats.
"""
