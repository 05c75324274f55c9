"""Hostile input, third round (issue 36): the limits read from the environment, the one YAML loader, the EtherCAT
slave configs and bring-up data, and the numbers of a hardware profile.

Each case below crashed, hung or was refused without naming its source before; each now gives a typed error
naming the file or variable, the field and the value. The hypothesis fuzz tests run under a memory cap and a time
cap (``hostile.memory_cap`` / ``hostile.time_cap``, or a capped child process). URDF import has its own file,
test_hostile_urdf_import.py.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hostile import assert_clean_error, memory_cap, run_cli, time_cap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.errors import InputError
from timor_core.limits import MAX_LIMIT, Limits

# -- the environment: one error line naming the variable and its value, exit 2 ---------------------------------------


@pytest.mark.parametrize(
    "variable, value",
    [
        ("TIMOR_MAX_FILE_BYTES", "128MB"),
        ("TIMOR_FORCE_WORKERS", "enabled"),
        ("TIMOR_MAX_SEARCH_SECONDS", "nan"),
        ("TIMOR_MAX_SEARCH_SECONDS", "-inf"),
        ("TIMOR_MAX_DENSITY", "1e400"),
        ("TIMOR_MAX_DOF", "0"),
        ("TIMOR_MAX_DOF", "9" * 5000),
        ("TIMOR_MAX_MESH_BYTES", "1" + "0" * 400),
        ("TIMOR_COMPILED", "yes"),
    ],
)
def test_a_bad_environment_variable_is_one_error_line_naming_it(variable, value):
    proc = run_cli(["db", "info", "geometric_primitive_modules"], env={variable: value}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert_clean_error(proc, variable, value[:20])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_good_environment_variables_still_set_their_limits():
    """Read on first use in a child process, as a command or a ROS node reads them."""
    code = "from timor_core.limits import limits; l = limits(); print(l.max_dof, l.force_workers, l.max_duration_s)"
    env = dict(os.environ, TIMOR_MAX_DOF="7", TIMOR_FORCE_WORKERS="on", TIMOR_MAX_DURATION_S="2.5")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == ["7", "True", "2.5"], proc.stderr


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["TIMOR_MAX_DOF", "TIMOR_MAX_FILE_BYTES", "TIMOR_MAX_SEARCH_SECONDS", "TIMOR_FORCE_WORKERS"]),
    st.one_of(
        st.text(max_size=12),
        st.floats().map(repr),
        st.integers(-(10**30), 10**30).map(str),
        st.text(alphabet="9", min_size=300, max_size=5000),
    ),
)
def test_fuzz_environment_limits(variable, value):
    """Any text in a TIMOR_ variable: the limits it sets are positive, finite and at most MAX_LIMIT, or an InputError
    names the variable (the CLI turns that into its one line, see above)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    with memory_cap(), time_cap(60):
        try:
            lim = Limits.from_environment({variable: value})
        except InputError as exc:
            assert variable in str(exc)
            return
    for name in ("max_dof", "max_file_bytes", "max_search_seconds"):
        assert 0 < getattr(lim, name) <= MAX_LIMIT
