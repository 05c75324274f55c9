"""Run by test_launch_reaping.py in a process of its own: launch stopping a child that has exited but that
asyncio's child watcher thread has not collected yet (a busy machine: the thread waits for a CPU).

launch's SIGINT to a child goes through ``Popen.send_signal``, which polls first (``waitpid(pid, WNOHANG)``, bpo-38630)
and so reaps the zombie in launch's main thread; the watcher thread's ``waitpid(pid, 0)`` then fails with
ChildProcessError and asyncio reports exit code 255 ("Unknown child process pid N"): launch logs "process has died"
for a child that ended cleanly. The watcher's delay is imitated by a 1 s sleep before its waitpid.

argv[1]: ``zombie``: launch shuts down 0.7 s after the start, while the child (``sleep 0.3``) is a zombie (as the
test stopped the launch once the node it had sent SIGINT to was a zombie); ``reported``: launch shuts down once it
has reported the child's exit (ros2_cli.launch_reported_end's rule).
"""

import os
import sys
import threading
import time

_waitpid = os.waitpid


def _late_watcher_waitpid(pid: int, options: int):
    if threading.current_thread().name.startswith("asyncio-waitpid-"):  # Python 3.11's ThreadedChildWatcher
        time.sleep(1.0)
    return _waitpid(pid, options)


os.waitpid = _late_watcher_waitpid

from launch import LaunchDescription, LaunchService  # noqa: E402
from launch.actions import EmitEvent, ExecuteProcess, RegisterEventHandler, TimerAction  # noqa: E402
from launch.event_handlers import OnProcessExit  # noqa: E402
from launch.events import Shutdown  # noqa: E402

child = ExecuteProcess(cmd=["sleep", "0.3"], name="child", output="screen")
shutdown = EmitEvent(event=Shutdown(reason="stop"))
if sys.argv[1] == "zombie":
    stop = TimerAction(period=0.7, actions=[shutdown])
else:
    stop = RegisterEventHandler(OnProcessExit(target_action=child, on_exit=[shutdown]))
service = LaunchService()
service.include_launch_description(LaunchDescription([child, stop]))
sys.exit(service.run())
