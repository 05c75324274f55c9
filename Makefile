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
	$(PY) -m timor_core.search.filtering.proof_aot --with-ik || echo "kernels not built ahead of time: numba's run by the rule"
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

# The suites run on every core (pytest-xdist, one worker per core: WORKERS=1 for one process). Core: tests are
# spread one by one, those marked xdist_group(name) stay on one worker; ROS: a test file stays on one worker
# (its module fixtures start launches), each worker in a ROS domain of its own (src/timor_ros/test/conftest.py).
# A test that hangs fails after TEST_TIMEOUT seconds (pytest-timeout) instead of stopping the suite.
WORKERS      ?= auto
ROS_WORKERS  ?= $(WORKERS)
TEST_TIMEOUT ?= 900
# The core suite starts many Python processes (CLI subprocesses, Dask and shard workers) besides its workers:
# where PYTHONDONTWRITEBYTECODE is set, each compiles timor_core's sources and pytest's rewritten test modules anew,
# so the core runs cache bytecode in build/pycache (not beside the sources). Measured 2026-11-29 at load ~20: a
# worker's collection 10.0 -> 4.4 CPU-s and a `timor` child ~0.6 -> ~0.47 CPU-s once the cache is filled; the first
# run after a clone fills it (its collection cost 22 instead of 18 CPU-s over both workers). The ROS test plugins
# (launch_testing & co., ~0.4 CPU-s per pytest process) are not loaded there.
CORE_ENV      = PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX=$(CURDIR)/build/pycache
CORE_PLUGINS  = -p no:launch_testing -p no:launch_pytest -p no:launch_ros -p no:colcon_core_warnings_stderr
CORE_PYTEST   = $(CORE_ENV) $(PY) -m pytest -q $(CORE_PLUGINS) -n $(WORKERS) --dist loadgroup --timeout $(TEST_TIMEOUT)
# the tests that assert a wall-clock budget (marked timing in src/timor_core/tests/conftest.py) run alone, after
# (`-m timing` collects only the modules conftest.TIMING names)
TIMING_PYTEST = $(CORE_ENV) $(PY) -m pytest -q $(CORE_PLUGINS) -n 0 -m timing --timeout $(TEST_TIMEOUT)
# The ROS suite caches bytecode there too: every launch, node and ros2 CLI process it starts inherits the prefix, and
# without it each compiled timor_core/timor_ros anew. Measured 2026-11-29 at load 18-20 on test_nodes.py +
# test_hostile_ros.py (42 tests, one worker, CPU of pytest and its children): 13.2 and 13.7 CPU-s without, 9.9 and
# 12.1 with a filled cache, 13.4 when it is filled (the first run after a clone costs what every run cost before).
ROS_PYTEST    = $(CORE_ENV) $(PY) -m pytest -q -n $(ROS_WORKERS) --dist loadfile --no-loadscope-reorder --timeout $(TEST_TIMEOUT)

# `make test` lists its slowest tests (the CI log then says where a slow run's time went: the ROS suite took 13-14
# min in clean-clone CI runs against ~6 min on a warm tree at a similar load, cause not found)
DURATIONS     = --durations=25 --durations-min=5

# numba compiles the reach proofs' and the IK's kernels once (~20 s; cached beside their sources), here rather
# than inside a test, and (scripts/warm_numba.py) the witness descent and the sweep bound that test_proof_aot.py
# compares with their ahead-built twins (on a fresh clone ~7 CPU-s moved out of pytest; ~1.5 CPU-s when cached);
# the proofs' and the IK's kernels built ahead of time again if their sources changed (a no-op otherwise)
test: $(STAMP) lint typecheck
	$(CORE_ENV) $(PY) -c "from timor_core.search.filtering.proof_kernel import load_compiled; load_compiled()"
	$(CORE_ENV) $(PY) scripts/warm_numba.py
	$(PY) -m timor_core.search.filtering.proof_aot --with-ik || echo "kernels not built ahead of time: numba's run by the rule"
	$(CORE_PYTEST) $(DURATIONS) -m "not timing" src/timor_core/tests
	$(TIMING_PYTEST) src/timor_core/tests
	$(if $(wildcard $(ROS_STAMP)),$(ROS_PYTEST) $(DURATIONS) src/timor_ros/test,@echo "ROS tests skipped: run 'make ros' first")

test-ros: $(ROS_STAMP)
	$(ROS_PYTEST) src/timor_ros/test

# the ROS suite in 3 random orders (pytest-random-order), then with both cores kept busy by 2 bounded CPU burners
# (ended by their PIDs: timeout passes the TERM on to its burner; no other process on the machine is touched)
test-ros-random: $(ROS_STAMP)
	for seed in 1 2 3; do $(ROS_PYTEST) -p random_order --random-order-seed=$$seed src/timor_ros/test || exit 1; done

# three runs in a row, each with both cores kept busy (the burners live as long as the three runs, at most 1 h)
test-ros-load: $(ROS_STAMP)
	timeout 3600 sh -c 'yes > /dev/null' & b1=$$!; timeout 3600 sh -c 'yes > /dev/null' & b2=$$!; \
	rc=0; for run in 1 2 3; do echo "run $$run: $$(uptime)"; $(ROS_PYTEST) src/timor_ros/test || { rc=$$?; break; }; done; \
	kill $$b1 $$b2; exit $$rc

# the inner loop: the core suite without the tests marked slow (make test runs those too)
test-fast: $(STAMP)
	$(CORE_PYTEST) -m "not slow and not timing" src/timor_core/tests

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) build .pytest_cache
