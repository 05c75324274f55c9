"""The browser viewer: headless start, HTTP on its port, freeing the port, typed errors, Ctrl-C, a real browser."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("viser")

from timor_core.errors import TimorError  # noqa: E402
from timor_core.model.assembly import ModuleAssembly  # noqa: E402
from timor_core.task import Task  # noqa: E402
from timor_core.viz.viewer import PortInUseError, Viewer, animation  # noqa: E402

TASK = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "cobra" / "tasks" / "simple" / "PTP_1.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_free(port: int) -> bool:
    """Whether a server could listen on the port now (SO_REUSEADDR, as servers do: TIME_WAIT does not count)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


@pytest.fixture(scope="module")
def robot(primitives):
    return ModuleAssembly.from_serial_modules(primitives, ["base", "J2", "i_45", "J2", "J2", "eef"]).robot


def test_serves_http_and_frees_the_port(robot):
    with Viewer(port=0) as viewer:  # any free port: no race with other programs picking ports
        port = viewer.port
        assert port > 0 and viewer.url.endswith(f":{port}")
        scene = viewer.add_robot(robot, robot.random_configuration(0))
        scene.update(np.zeros(robot.dof))
        scene.set_color((10, 200, 10))
        with urllib.request.urlopen(viewer.url, timeout=10) as response:
            assert response.status == 200 and b"<html" in response.read().lower()
        scene.remove()
    deadline = time.monotonic() + 5
    while not _port_free(port) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _port_free(port)
    viewer.close()  # twice is fine
    Viewer(port=port).close()  # the same port serves again


def test_port_in_use_is_a_typed_error():
    with socket.socket() as blocker:
        blocker.bind(("127.0.0.1", 0))
        blocker.listen()
        port = blocker.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"port {port}") as info:
            Viewer(port=port)
        assert isinstance(info.value, TimorError) and info.value.port == port


def test_animation_and_visualize_methods(robot):
    q = np.linspace(np.zeros(robot.dof), np.full(robot.dof, 0.5), 5)
    viewer = animation(robot, q, dt=0.02, port=0)
    try:
        time.sleep(0.15)
        robot.visualize(viewer=viewer)
        assert len(viewer.robots) == 2
    finally:
        viewer.close()


@pytest.mark.skipif(not TASK.is_file(), reason="real CoBRA tasks not available")
def test_task_scene():
    with Task.from_json_file(TASK).visualize(port=0) as viewer:
        assert viewer.server.get_port() == viewer.port


def test_cli_view_checks_its_input_before_opening_a_port(capsys):
    from timor_core.cli.app import main

    port = _free_port()
    argv = ["view", "robot", "--db", "robco_like", "--modules", "base", "Q", "gripper", "--port", str(port)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "no module with ID 'Q'" in captured.err and "viser" not in captured.out + captured.err
    assert _port_free(port)


def test_ctrl_c_on_db_show_exits_cleanly():
    port = _free_port()
    cmd = [sys.executable, "-m", "timor_core.cli", "db", "show", "geometric_primitive_modules", "--port", str(port)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 60
        while "viewer at" not in line and time.monotonic() < deadline and proc.poll() is None:
            line = proc.stderr.readline()
        assert "viewer at" in line, proc.stderr.read() if proc.poll() is not None else line
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "viewer stopped" in err
    assert _port_free(port)


def _chrome():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("chromium and chromedriver not installed (scripts/setup_browser.sh)")
    webdriver = pytest.importorskip("selenium.webdriver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=640,480"):
        options.add_argument(arg)
    options.add_argument("--enable-unsafe-swiftshader")
    try:
        return webdriver.Chrome(service=webdriver.ChromeService(executable_path=driver), options=options)
    except Exception as exc:  # a broken browser install: skip, do not fail
        pytest.skip(f"chromium does not start: {exc}")


@pytest.mark.skipif(os.environ.get("TIMOR_NO_BROWSER") == "1", reason="TIMOR_NO_BROWSER=1")
def test_page_renders_in_headless_chromium(robot, tmp_path):
    import imageio.v2 as imageio

    def screenshot() -> np.ndarray:
        browser.save_screenshot(str(tmp_path / "page.png"))
        return imageio.imread(tmp_path / "page.png")[..., :3].astype(int)

    browser = _chrome()
    try:
        with Viewer(port=0) as viewer:
            viewer.add_robot(robot)
            browser.get(viewer.url)
            # until the page has drawn something (it was a fixed 3 s wait): a blank page has no contrast
            deadline = time.monotonic() + 30
            image = screenshot()
            while image.std() <= 5 and time.monotonic() < deadline:
                time.sleep(0.2)
                image = screenshot()
            # the browser goes first: a viewer closed while this page still renders waits ~6 s for it
            browser.quit()
    finally:
        browser.quit()  # a second quit is harmless
    assert image.shape[0] > 100 and image.std() > 5
