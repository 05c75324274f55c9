# Two commands set everything up on a fresh machine:
#   make demo   builds a robot from the embedded module set (URDF, DOF, mass, TCP pose), then finds, verifies,
#               plans and exports the lightest robot for the embedded pick-and-place task
#   make test   runs the whole test suite (lint and typecheck included)
# Both create the virtual environment .venv and install what they need on first use.
#   make ros    adds ROS 2 (PyPI wheels), builds timor_interfaces (build/ros_ws) and installs timor_ros;
#               `make test` then also runs src/timor_ros/test (skipped cleanly where ROS is not set up)

PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.timor-installed

.PHONY: venv demo test test-fast test-ros test-ros-random test-ros-load ros lint typecheck format bench clean

ROS_STAMP = $(VENV)/.timor-ros-installed

$(STAMP): src/timor_core/pyproject.toml src/timor_core/setup.cfg src/timor_core/setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e 'src/timor_core[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/timor demo --out build/demo

lint: $(STAMP)
	$(VENV)/bin/ruff check src $(wildcard benchmarks) $(wildcard examples)
	$(VENV)/bin/ruff format --check src $(wildcard benchmarks) $(wildcard examples)

typecheck: $(STAMP)
	$(VENV)/bin/mypy --config-file src/timor_core/pyproject.toml --ignore-missing-imports src/timor_core/timor_core src/timor_ros/timor_ros
	$(VENV)/bin/mypy --config-file src/timor_core/pyproject.toml --ignore-missing-imports src/timor_core/timor_core/hardware/bringup_templates/*.launch.py src/timor_ros/launch/*.launch.py

format: $(STAMP)
	$(VENV)/bin/ruff format src $(wildcard benchmarks) $(wildcard examples)
	$(VENV)/bin/ruff check --fix src $(wildcard benchmarks) $(wildcard examples)

$(ROS_STAMP): $(STAMP) scripts/setup_ros.sh $(wildcard src/timor_interfaces/*/*) src/timor_interfaces/CMakeLists.txt src/timor_ros/setup.py
	scripts/setup_ros.sh $(VENV)
	touch $(ROS_STAMP)

ros: $(ROS_STAMP)

# numba compiles the reach proofs' and the IK's kernels once (~20 s; cached beside their sources), here rather
# than inside a test
test: $(STAMP) lint typecheck
	$(PY) -c "from timor_core.search.proof_kernel import load_compiled; load_compiled()"
	$(PY) -m pytest -q src/timor_core/tests
	$(if $(wildcard $(ROS_STAMP)),$(PY) -m pytest -q src/timor_ros/test,@echo "ROS tests skipped: run 'make ros' first")

test-ros: $(ROS_STAMP)
	$(PY) -m pytest -q -s src/timor_ros/test

# the ROS suite in 3 random orders (pytest-random-order), then with both cores kept busy by 2 bounded CPU burners
# (ended by their PIDs: timeout passes the TERM on to its burner; no other process on the machine is touched)
test-ros-random: $(ROS_STAMP)
	for seed in 1 2 3; do $(PY) -m pytest -q -p random_order --random-order-seed=$$seed src/timor_ros/test || exit 1; done

test-ros-load: $(ROS_STAMP)
	timeout 1800 sh -c 'yes > /dev/null' & b1=$$!; timeout 1800 sh -c 'yes > /dev/null' & b2=$$!; \
	$(PY) -m pytest -q src/timor_ros/test; rc=$$?; kill $$b1 $$b2; exit $$rc

test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not slow" src/timor_core/tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build .pytest_cache
