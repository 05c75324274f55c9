"""Running timor nodes: one process, one MultiThreadedExecutor; Ctrl-C (SIGINT) or SIGTERM shut down cleanly, and so
does the loss of the parent process (a launch killed with SIGKILL cannot stop its children: a node that supervises
move_group or ros2_control_node would otherwise run on, unseen, with them)."""

from __future__ import annotations

import contextlib
import faulthandler
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import rclpy
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from timor_core import TimorError
from timor_core.errors import explain

__all__ = ["spin_nodes", "exit_now", "orphaned"]


def spin_nodes(
    factories: Sequence[Callable[..., Node]],
    argv: Sequence[str] | None = None,
    overrides: Sequence[list[Any]] | None = None,
    threads: int = 8,
) -> int:
    """Create the nodes (``factories[i](parameter_overrides=overrides[i])``) and spin them until shut down.

    Returns 0 after a clean shutdown (SIGINT/SIGTERM, or the parent process gone: see :func:`orphaned`), 2 if a
    node cannot start (bad parameters: one line on stderr, no traceback). Its SIGINT/SIGTERM handlers stay installed:
    the caller ends the process next (:func:`exit_now`).
    """
    # a native crash (SIGSEGV, SIGABRT, ... in the middleware or rclpy) prints every thread's Python stack on stderr,
    # which launch writes into its log: the only trace of a crash at shutdown that a test run leaves
    faulthandler.enable(file=sys.stderr, all_threads=True)
    parent = os.getppid()
    # our own SIGINT/SIGTERM handling: the executor stops, the nodes are destroyed, and only then is the context
    # shut down (rclpy's default handler shuts the context down first, under the middleware's running threads,
    # which crashed the process with SIGSEGV in some shutdowns)
    rclpy.init(args=list(argv) if argv is not None else None, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    nodes: list[Node] = []
    executor = MultiThreadedExecutor(num_threads=threads)
    try:
        for k, factory in enumerate(factories):
            kwargs = {"parameter_overrides": overrides[k]} if overrides and overrides[k] else {}
            node = factory(**kwargs)
            nodes.append(node)
            executor.add_node(node)
        while not stop.is_set() and rclpy.ok():
            try:
                executor.spin_once(timeout_sec=0.2)  # returns at least every 0.2 s to see the stop request
            except (KeyboardInterrupt, ExternalShutdownException):
                raise
            except Exception as exc:  # noqa: BLE001 - a callback that slipped past its guard: log, keep serving
                print(f"error: a callback failed: {explain(exc)}", file=sys.stderr)
            if orphaned(parent):
                with contextlib.suppress(OSError):  # the launch that read this output may be gone with it
                    print(f"parent process {parent} gone: shutting down", file=sys.stderr)
                break
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except TimorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        # a callback still running (e.g. waiting on another node's service) must end before its node goes away:
        # rclpy 9's MultiThreadedExecutor.shutdown returns only once it has, whatever the timeout (its thread pool
        # is joined without a bound; test_runner.py), so no callback runs during the teardown below
        if executor.shutdown(timeout_sec=5.0):
            for node in nodes:
                node.destroy_node()
        rclpy.try_shutdown()
    # the handlers stay until the process ends (exit_now): with the previous ones back, a second SIGINT before then
    # raised KeyboardInterrupt past exit_now, into interpreter finalization with the middleware's objects alive
    return 0


def orphaned(parent: int) -> bool:
    """Whether the process that started this one (``parent``, its pid at start) has ended: the kernel then hands this
    process to init or a subreaper, and ``getppid`` changes. A process started by init itself (a daemon, a container's
    entry point) is never orphaned."""
    return parent != 1 and os.getppid() != parent


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once everything above is shut down, skipping interpreter finalization.

    Nothing is left to finalize once :func:`spin_nodes` returns; skipping it keeps the middleware's native objects
    from being torn down in an arbitrary order by the garbage collector. Streams are flushed first; every file
    timor writes is written atomically and closed before this point.
    """
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
