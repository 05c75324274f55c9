"""Offscreen rendering: video frames, MP4 files, contact sheets and tolerance volumes (no screen, no browser)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("matplotlib")
imageio = pytest.importorskip("imageio.v2")
pytest.importorskip("imageio_ffmpeg")

from timor_core.cli.app import main  # noqa: E402
from timor_core.kinematics.tolerance import Composed, ProjectionTolerance  # noqa: E402
from timor_core.model.assembly import ModuleAssembly  # noqa: E402
from timor_core.viz.catalogue import contact_sheet, module_view  # noqa: E402
from timor_core.viz.render import simplified  # noqa: E402
from timor_core.viz.shapes import frame_axes  # noqa: E402
from timor_core.viz.tolerance_volume import tolerance_volume  # noqa: E402
from timor_core.viz.video import random_motion, robot_frames, robot_video  # noqa: E402

MODULES = ["base", "J2", "i_45", "J2", "J2", "eef"]


@pytest.fixture(scope="module")
def robot(primitives):
    return ModuleAssembly.from_serial_modules(primitives, MODULES).robot


def _not_blank(image: np.ndarray) -> bool:
    """More than a sliver of the image differs from its background (the top-left pixel)."""
    return float(np.mean(np.any(np.abs(image.astype(int) - image[0, 0].astype(int)) > 30, axis=-1))) > 0.01


def test_frames_differ_and_are_not_blank(robot):
    motion = random_motion(robot, seed=3)
    qs = motion.q[np.linspace(0, len(motion) - 1, 6).astype(int)]
    frames = list(robot_frames(robot, qs, size=(160, 120)))
    assert len(frames) == 6 and frames[0].shape == (120, 160, 3)
    assert all(_not_blank(f) for f in frames)
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 0.5


def test_mp4_has_moving_frames(robot, tmp_path):
    out = robot_video(robot, random_motion(robot, seed=1), tmp_path / "clip.mp4", fps=10, size=(160, 120))
    frames = [f for f in imageio.get_reader(out)]
    assert len(frames) >= 2 and _not_blank(frames[0])
    assert np.abs(frames[0].astype(int) - frames[-1].astype(int)).mean() > 0.5
    assert not list(tmp_path.glob(".clip*"))  # the temp file of the atomic write is gone


def test_cli_video_random_motion(tmp_path, capsys):
    out = tmp_path / "v.mp4"
    argv = ["video", "--db", "geometric_primitive_modules", "--modules", *MODULES, "--seed", "2"]
    assert main([*argv, "--fps", "8", "--size", "128x96", "-o", str(out)]) == 0
    assert out.stat().st_size > 1000


def test_cli_video_needs_a_robot_or_solution(tmp_path, capsys):
    assert main(["video", "-o", str(tmp_path / "v.mp4")]) == 2
    assert "--db and --modules" in capsys.readouterr().err


def test_outputs_of_an_unknown_format_are_refused(robot, tmp_path, capsys):
    from timor_core.errors import InputError
    from timor_core.viz.video import write_mp4

    with pytest.raises(InputError, match=r"\.mp4 file") as info:
        write_mp4(robot_frames(robot, np.zeros((2, robot.dof)), size=(64, 48)), tmp_path / "v.avi")
    assert info.value.value == str(tmp_path / "v.avi")
    argv = ["video", "--db", "geometric_primitive_modules", "--modules", *MODULES, "-o", str(tmp_path / "v.txt")]
    assert main(argv) == 2
    assert main(["db", "sheet", "geometric_primitive_modules", "-o", str(tmp_path / "s.txt")]) == 2
    err = capsys.readouterr().err
    assert ".mp4 file" in err and "cannot write a figure as .txt" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing written, no temp file left behind


def test_contact_sheet_not_blank(primitives, tmp_path):
    out = contact_sheet(primitives, tmp_path / "sheet.png", cols=4, tile=120)
    image = imageio.imread(out)[..., :3]
    assert image.shape[0] > 200 and _not_blank(image)


def test_module_view_places_connectors(primitives):
    view = module_view(primitives["J2"])
    assert set(view.connectors) == {"J2_proximal_connector", "J2_distal_connector"}
    assert view.mesh is not None and len(view.mesh.faces) > 0
    assert np.ptp(view.points, axis=0).max() > 0.05


@pytest.mark.parametrize(
    ("parts", "extents"),
    [
        ([("x", -0.1, 0.1), ("y", -0.05, 0.05), ("z", 0.0, 0.02)], (0.2, 0.1, 0.02)),
        ([("r_cyl", 0.0, 0.05), ("z", -0.1, 0.1)], (0.1, 0.1, 0.2)),
        ([("r_sph", 0.0, 0.1)], (0.2, 0.2, 0.2)),
    ],
)
def test_tolerance_volume_shapes(parts, extents):
    tolerance = Composed(ProjectionTolerance(p, (lo, hi)) for p, lo, hi in parts)
    nominal = np.eye(4)
    nominal[:3, 3] = (1.0, 2.0, 3.0)
    mesh = tolerance_volume(tolerance, nominal)
    assert np.allclose(mesh.extents, extents, atol=0.01)


def test_exact_and_rotation_only_tolerances_have_no_volume():
    assert tolerance_volume(Composed([ProjectionTolerance("Theta_R", (0.0, 0.1))]), np.eye(4)) is None
    assert tolerance_volume(Composed([ProjectionTolerance("x", (-1e-4, 1e-4))] * 1), np.eye(4)) is not None


def test_frame_axes_point_along_the_frame():
    T = np.eye(4)
    T[:3, :3] = [[0, -1, 0], [1, 0, 0], [0, 0, 1]]  # 90 deg about z
    T[:3, 3] = (0.5, -0.2, 1.0)
    axes = frame_axes(T, length=0.1, radius=0.005)
    assert [c for _, c in axes] == [(220, 50, 50), (50, 180, 60), (50, 90, 220)]
    for (mesh, _), direction in zip(axes, T[:3, :3].T):
        centre = mesh.bounds.mean(axis=0)
        assert np.allclose(centre, T[:3, 3] + 0.05 * direction, atol=1e-6)  # from the origin along the axis
        assert np.isclose(np.max(mesh.extents), 0.1, atol=1e-6)


def test_simplified_caps_triangles():
    import trimesh

    mesh = trimesh.creation.icosphere(subdivisions=5)
    assert len(simplified(mesh, 500).faces) <= 500 < len(mesh.faces)


USER_STUDY = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "cobra" / "tasks" / "user_study.json"


@pytest.mark.skipif(not USER_STUDY.is_file(), reason=f"user-study task not available (expected {USER_STUDY})")
def test_solution_of_the_user_study_plans_and_films(tmp_path, capsys):
    """End to end on real data: solve the user study with its lightest robot, write the solution, film it (at 10 fps:
    37 frames, half the default's, the same rendering and encoding)."""
    import imageio.v3 as iio

    from timor_core.task.feedback import load_task
    from timor_core.task.solution import Solution

    sol = tmp_path / "solution.json"
    modules = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
    args = ["solve", str(USER_STUDY), "--db", "robco_like", "--modules", *modules, "--solution", str(sol)]
    assert main(args) == 0
    assert "valid" in capsys.readouterr().err
    solution = Solution.from_json_file(sol, load_task(USER_STUDY), "robco_like")
    assert solution.valid and all(solution.achieved(g) for g in solution.task.goals)
    out = tmp_path / "solution.mp4"
    assert main(["video", str(sol), "--task", str(USER_STUDY), "--size", "320x240", "--fps", "10", "-o", str(out)]) == 0
    frames = iio.imread(out, index=None)
    assert len(frames) > 10
    assert frames[0].std() > 5  # not blank
    assert np.abs(frames[-1].astype(int) - frames[0]).mean() > 1.0  # the robot moved
