"""See a solution: an MP4 video rendered without a screen, a plot of its joint trajectories, and the browser viewer.

Shows: solving the pick-and-place task from a chosen start configuration (q_start), solution_video (offscreen
rendering with matplotlib, encoded by imageio's ffmpeg: no display, no GPU), plot_trajectory with the robot's
limits, and, with --serve, the interactive browser viewer (viser) until Ctrl-C. Needs the viz extra
(pip install -e 'src/timor_core[viz]'; make installs it).

Run:  python examples/visualize.py [OUTPUT_DIR] [--serve]      (default OUTPUT_DIR: build/examples)
"""

import sys
from pathlib import Path

import numpy as np

from timor_core import ModuleAssembly, ModulesDB
from timor_core.task import Task
from timor_core.task.point_to_point import solve_point_to_point
from timor_core.viz.plots import plot_trajectory, robot_limits
from timor_core.viz.video import solution_video

args = [a for a in sys.argv[1:] if not a.startswith("--")]
out = Path(args[0]) if args else Path("build/examples")
out.mkdir(parents=True, exist_ok=True)

task = Task.from_name("pick_and_place")  # shipped with timor_core; Task.from_json_file(path) for your own
db = ModulesDB.from_name("robco_like")
assembly = ModuleAssembly.from_serial_modules(db, ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"])

# Start from a home configuration instead of the first goal's; the final returnTo comes back to it.
home = np.array([0.0, -1.0, 1.5])
solution = solve_point_to_point(task, assembly, rng=0, q_start=home)
trajectory = solution.trajectory
print(f"solution valid: {solution.valid}, {trajectory.t[-1]:.2f} s from q = {home.tolist()}")

# 1. A video: the robot among the obstacles, goal frames and tolerance volumes (small and fast here).
video = solution_video(solution, out / "pick_and_place.mp4", fps=10, size=(320, 240))
print(f"wrote {video} ({video.stat().st_size} bytes)")

# 2. Joint positions, velocities and the torques the motion needs, with the robot's limits dashed.
robot = solution.robot
tau = np.array([robot.id(q, dq, ddq) for q, dq, ddq in zip(trajectory.q, trajectory.dq, trajectory.ddq)])
plot = plot_trajectory(trajectory, out / "pick_and_place_joints.png", tau=tau, limits=robot_limits(robot))
print(f"wrote {plot}; peak |tau| per joint: {np.round(np.abs(tau).max(axis=0), 1).tolist()}")

# 3. The browser viewer (viser): robot, obstacles and goals, with a time slider to scrub the motion.
if "--serve" in sys.argv:
    viewer = solution.visualize(port=8080)
    viewer.wait(on_ready=lambda: print(f"viewer at {viewer.url} (Ctrl-C to stop)"))
