"""ROS 2 nodes of timor (thin wrappers of timor_core)."""
