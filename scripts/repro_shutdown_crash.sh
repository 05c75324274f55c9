#!/usr/bin/env bash
# Reproduces the SIGSEGV of a node's DDS teardown at a launch's SIGINT (benchmarks/README.md, "modules_db's SIGSEGV
# at a launch's SIGINT", 2026-11-29): moveit.launch.py with example-robot-data's UR5 imported, and after each start
# the launch's SIGINT followed within 0-90 ms by SIGABRT to the supervised move_group (its abort in its own shutdown,
# moveit/moveit2#3484). Reports every "process has died" and keeps that run's folder (launch.log with the dead node's
# faulthandler stacks, and modules_db's core dump for gdb). Rare even so: 1 of 96 runs at load 10-20 (2026-11-29).
#   scripts/repro_shutdown_crash.sh [RUNS] [OUT]      (from the repository root, after make ros; RUNS default 30)
# Ends only the processes it started, by PID (a launch still running 60 s after its SIGINT: its process group).
set -m  # each launch in its own process group, with SIGINT at its default (a background job would ignore it)
runs=${1:-30}
out=${2:-/tmp/timor_shutdown_crash}
repo=$(cd "$(dirname "$0")/.." && pwd)
py=${PY:-$repo/.venv/bin/python}
ros2=$(dirname "$py")/ros2
export PYTHONPATH="$repo/src/timor_core:$repo/src/timor_ros${PYTHONPATH:+:$PYTHONPATH}"
export ROS_DOMAIN_ID=${ROS_DOMAIN_ID:-$((100 + RANDOM % 100))} ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST TIMOR_COMPILED=0
ulimit -S -c 0  # no core of the aborted move_group; modules_db's limit is raised below
mkdir -p "$out"
urdf=$("$py" -c "
from importlib import metadata
print(next(f.locate() for f in metadata.files('example-robot-data') if str(f).endswith('/ur5_robot.urdf')))")
db=$out/ur5/modules.json
[ -f "$db" ] || "$py" -m timor_core.cli import "$urdf" -o "$db" --keep-names \
    --package-dir "$(dirname "$(dirname "$(dirname "$(dirname "$(dirname "$urdf")")")")")" >/dev/null || exit 1
crashes=0
for i in $(seq 1 "$runs"); do
    d=$out/run$i; mkdir -p "$d"; cd "$d" || exit 1
    "$ros2" launch timor_ros moveit.launch.py "db:=$db" modules:=ur5 rviz:=false search:=false \
        "config_dir:=$d/config" prefix:=u_ namespace:=u >"$d/launch.log" 2>&1 &
    launch=$!
    for _ in $(seq 1 600); do  # until move_group plans (or the supervisor gave up), at most ~2 min
        grep -q "move_group planning for\|move_group not restarted" "$d/launch.log" && break
        kill -0 $launch 2>/dev/null || break
        sleep 0.2
    done
    md=$(pgrep -P $launch -f "lib/timor_ros/modules_db")
    [ -n "$md" ] && prlimit --pid "$md" --core=unlimited: 2>/dev/null
    mg=$(pgrep -f "move_group --ros-args -r __node:=move_group -r __ns:=/u --params-file $d/config")
    kill -INT $launch
    sleep "0.0$((RANDOM % 10))"
    [ -n "$mg" ] && kill -ABRT "$mg" 2>/dev/null
    for _ in $(seq 1 300); do kill -0 $launch 2>/dev/null || break; sleep 0.2; done
    kill -0 $launch 2>/dev/null && kill -KILL -- -$launch
    wait $launch
    died=$(grep "process has died" "$d/launch.log" | grep -v "\[move_group")
    echo "$(date -u +%T) run $i load $(cut -d' ' -f1 /proc/loadavg) ${died:-ok}"
    cd "$out" || exit 1
    if [ -n "$died" ]; then crashes=$((crashes + 1)); else rm -rf "$d"; fi
done
echo "$crashes of $runs runs had a process die; kept: $out/run*"
