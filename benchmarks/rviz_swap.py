"""RViz swap latency: a set_assembly request -> the real rviz2 draws the new robot (issue 35).

    .venv/bin/python benchmarks/rviz_swap.py [--rounds 10] [--json]

Needs `make ros` with the ros-cpp and ros-rviz kits (the real robot_state_publisher and rviz2; ../shared) and Xvfb.
Starts `ros2 launch timor_ros assembly.launch.py rviz:=true` (modules_db, assembly, robot_state_publisher, rviz2 with
timor.rviz; this process publishes the joint states) on a private Xvfb display in an isolated ROS domain, waits until
RViz draws the first robot, then swaps between two robco_like arms `--rounds` times. Per swap, from the moment the
request is sent:
  * answer: the assembly node's response;
  * first change: the first screenshot that differs from the one taken just before the request;
  * drawn: the first screenshot in which RViz draws the new robot where timor's FK puts it (the tests' check,
    src/timor_ros/test/rviz_tools.py: 90% of its silhouette drawn, 90% of what is drawn inside it, 85% of it in
    RViz's link colour).
Screenshots (Pillow's X11 grab of the Xvfb display, ~5-10 ms each) are taken back to back, at most one per 10 ms,
for 1.5 s after the request is sent, and checked afterwards (bisection), so the figures are upper bounds within one
grab's spacing (the time is read before each grab; ~10-20 ms on this machine).
Medians and the 90th percentile over the rounds; rviz2 renders with Mesa's llvmpipe (software OpenGL) at up to its
configured 30 frames/s. No reference counterpart (the reference toolbox has no ROS nodes).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src" / "timor_ros" / "test"))  # the tests' ROS and RViz helpers
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

ROBOTS = (
    ["base", "J", "L_250", "J", "L_150", "J", "gripper"],
    ["base", "J", "L_150", "J", "L_100", "J", "L_100", "gripper"],
)
Q = [0.6, -0.9, 0.7]


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p * (len(ordered) - 1)))]


def _recorded(run, names, seconds: float = 1.5, spacing: float = 0.01) -> list:
    """Screenshots of the whole display back to back for ``seconds`` (at most one per ``spacing``), with the time
    (monotonic) read before each grab; analysed afterwards, so the grabs follow each other every ~10-20 ms."""
    from PIL import ImageGrab

    frames = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        run.js.publish(names, Q)
        t = time.monotonic()
        frames.append((t, ImageGrab.grab(xdisplay=run.xvfb.display)))
        time.sleep(max(0.0, t + spacing - time.monotonic()))
    return frames


def _first_drawn(frames, rt, expected, before) -> tuple[float, float]:
    """The times of the first frame that differs from ``before`` (in more than 50 pixels) and of the first that
    shows the new robot (bisection: once drawn, it stays drawn); NaN where none does."""
    import numpy as np

    def shows(k: int) -> bool:
        image = np.asarray(frames[k][1].convert("RGB"))
        panel = rt.Panel.find(image)
        return panel is not None and rt.match(image, panel, expected(panel), rt.red(image, panel)).good(colour=0.85)

    def differs(k: int) -> bool:
        image = np.asarray(frames[k][1].convert("RGB")).astype(int)
        return bool((np.abs(image - before).sum(axis=2) > 30).sum() > 50)

    out = []
    for test in (differs, shows):
        low, high = 0, len(frames)
        while low < high:
            mid = (low + high) // 2
            low, high = (low, mid) if test(mid) else (mid + 1, high)
        out.append(frames[low][0] if low < len(frames) else math.nan)
    return out[0], out[1]


def _until_drawn(run, rt, names, expected, timeout: float = 90.0) -> None:
    """Screenshots until the expected silhouette is drawn (the first robot, before the timed swaps)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        run.js.publish(names, Q)
        image = run.xvfb.shot()
        panel = rt.Panel.find(image)
        if panel is not None and rt.match(image, panel, expected(panel), rt.red(image, panel)).good(colour=0.85):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the robot was not drawn within {timeout} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=10, help="timed swaps (alternating robots)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    import numpy as np
    import rviz_tools as rt
    from ros_client import RosClient

    from timor_core import ModuleAssembly, ModulesDB
    from timor_interfaces.srv import SetAssembly

    missing = rt.rviz_missing()
    if missing:
        print(f"rviz_swap: {missing}", file=sys.stderr)
        return 2
    db = ModulesDB.load("robco_like")
    robots = [ModuleAssembly.from_serial_modules(db, m).robot for m in ROBOTS]
    meshes = [rt.robot_meshes(r, np.asarray(Q)) for r in robots]
    silhouettes: dict = {}

    def expected(k):
        def of(panel):  # computed once per robot and panel (~0.3 s), not per screenshot
            if (k, panel) not in silhouettes:
                silhouettes[k, panel] = rt.silhouette(panel, meshes[k])
            return silhouettes[k, panel]

        return of

    names = list(robots[0].model.names)[1:]  # both arms: m1/m3/m5_J_joint
    client = RosClient()
    log = Path(tempfile.mkdtemp(prefix="rviz_swap_")) / "launch.log"
    run = rt.RvizLaunch(client, log, ["db:=robco_like", f"modules:={' '.join(ROBOTS[0])}"])
    answers, changes, drawn, spacing = [], [], [], []
    try:
        run.wait_ready()
        t0 = time.monotonic()
        _until_drawn(run, rt, names, expected(0))
        first = time.monotonic() - t0
        time.sleep(0.5)
        for k in range(1, args.rounds + 3):  # one untimed warm-up swap each way first (descriptions cached after)
            before = run.xvfb.shot().astype(int)
            start = time.monotonic()
            request = SetAssembly.Request(modules=ROBOTS[k % 2])
            response = client.call(SetAssembly, "/assembly/set_assembly", request, timeout=30)
            answered = time.monotonic()
            if not response.success:
                raise RuntimeError(response.message)
            frames = _recorded(run, names)
            spacing.extend(b[0] - a[0] for a, b in zip(frames, frames[1:]))
            change, seen = _first_drawn(frames, rt, expected(k % 2), before)
            del frames
            if math.isnan(seen):
                raise RuntimeError("the new robot was not drawn within the recorded 1.5 s")
            if k > 2:
                answers.append(answered - start)
                changes.append(change - start)
                drawn.append(seen - start)
            time.sleep(0.5)
    finally:
        run.close()
        client.close()
    report = {
        "rounds": len(drawn),
        "first_robot_drawn_s": first,
        "answer_ms": {"median": 1e3 * statistics.median(answers), "p90": 1e3 * _percentile(answers, 0.9)},
        "first_change_ms": {"median": 1e3 * statistics.median(changes), "p90": 1e3 * _percentile(changes, 0.9)},
        "drawn_ms": {
            "median": 1e3 * statistics.median(drawn),
            "p90": 1e3 * _percentile(drawn, 0.9),
            "max": 1e3 * max(drawn),
        },  # fmt: skip
        "grab_spacing_ms": {"median": 1e3 * statistics.median(spacing), "p90": 1e3 * _percentile(spacing, 0.9)},
        "load_average": os.getloadavg()[0],
    }
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{len(drawn)} swaps: answer median {report['answer_ms']['median']:.0f} ms "
              f"(p90 {report['answer_ms']['p90']:.0f}); first change on the screen median "
              f"{report['first_change_ms']['median']:.0f} ms; request -> new robot drawn in RViz median "
              f"{report['drawn_ms']['median']:.0f} ms (p90 {report['drawn_ms']['p90']:.0f}, max "
              f"{report['drawn_ms']['max']:.0f}); screenshots {report['grab_spacing_ms']['median']:.0f} ms apart (p90 "
              f"{report['grab_spacing_ms']['p90']:.0f}); first robot drawn {first:.1f} s after the node was ready; "
              f"load {report['load_average']:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
