"""The kinematics layer: the Pinocchio robot of an assembly, collision checking, inverse kinematics,
motion planning, trajectories, and the tolerated poses and frames IK and tasks share."""
