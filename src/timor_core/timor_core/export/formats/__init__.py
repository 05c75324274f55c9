"""One writer per file format of another tool, each taking an assembly: URDF (``urdf``, walking the assembly through
text memoized per module instance in ``urdf_walk``/``urdf_parts``, options in ``urdf_options``), ``xacro``, ``srdf``,
``mjcf``, the ``<ros2_control>`` block (``ros2_control``), a MoveIt configuration (``moveit_config``; its nodes'
parameters in ``moveit_parameters``), the RViz config of one launch (``rviz_config``), a task's obstacles as MoveIt's
planning scene (``planning_scene``), every YAML file's text (``yaml_text``), what each ROS 2 distro's nodes expect of
these files (``ros_distro``), and urdfdom's ``check_urdf``, the reference parser the written URDFs are checked with
(``urdfdom``).

May import from timor_core: errors, limits, common, model, kinematics, task.
"""
