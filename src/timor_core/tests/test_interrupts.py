"""``timor_core.common.interrupts``: a process started with SIGINT and SIGQUIT ignored (a shell's background job) gives
both back, so the processes it starts take them as from a terminal (both test suites' conftests call it)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import subprocess, sys
    from timor_core.common.interrupts import restore_interrupts
    print("changed", restore_interrupts() if sys.argv[1] == "restore" else [])
    # the mask of ignored signals of a process started from here (grep reads its own status)
    line = subprocess.run(["grep", "SigIgn", "/proc/self/status"], capture_output=True, text=True).stdout
    print("ignored", int(line.split()[1], 16))
    """
)


def _ignored_in_grandchild(how: str) -> tuple[str, int]:
    def ignore() -> None:  # as a shell starts `cmd &`
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGQUIT, signal.SIG_IGN)

    out = subprocess.run([sys.executable, "-c", CHILD, how], capture_output=True, text=True, timeout=60,
                         preexec_fn=ignore)  # fmt: skip
    assert out.returncode == 0, out.stderr
    changed, ignored = out.stdout.splitlines()
    return changed, int(ignored.split()[1])


def test_a_background_jobs_children_take_sigint_and_sigquit_again():
    bits = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGQUIT - 1))
    changed, ignored = _ignored_in_grandchild("leave")
    assert changed == "changed []" and ignored & bits == bits, "the grandchild inherits both ignored"
    changed, ignored = _ignored_in_grandchild("restore")
    assert changed == "changed ['SIGINT', 'SIGQUIT']" and ignored & bits == 0


def test_this_suite_runs_with_sigint_taken():
    """The conftest gave SIGINT back where the suite was started as a background job."""
    assert signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    assert signal.getsignal(signal.SIGQUIT) is not signal.SIG_IGN
