"""The projections' full ranges, poses from rotation vectors and the pose and tolerance strategies the tolerance
tests share (test_tolerance*.py)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from timor_core.kinematics.tolerance import Composed, ProjectionTolerance
from timor_core.kinematics.tolerance_base import NOMINAL_FRAME, PROJECTIONS, WORLD_FRAME, Interval, ToleranceFrame

PI = math.pi
RANGE = {"x": (-math.inf, math.inf), "y": (-math.inf, math.inf), "z": (-math.inf, math.inf), "r_cyl": (0.0, math.inf),
         "phi_cyl": (-PI, PI), "r_sph": (0.0, math.inf), "theta": (0.0, PI), "phi_sph": (-PI, PI), "N_x": (-PI, PI),
         "N_y": (-PI, PI), "N_z": (-PI, PI), "Theta_R": (0.0, PI)}  # fmt: skip


def pose(v) -> np.ndarray:
    """A 4x4 pose from a rotation vector and a translation, ``[rx, ry, rz, x, y, z]``."""
    T = np.eye(4)
    T[:3, :3] = Rotation.from_rotvec(np.asarray(v[:3], dtype=float)).as_matrix()
    T[:3, 3] = v[3:]
    return T


def full(projection: str, frame: ToleranceFrame = NOMINAL_FRAME) -> ProjectionTolerance:
    """A tolerance on one projection that allows everything (to read its value via ``error``)."""
    return ProjectionTolerance(projection, Interval(*RANGE[projection]), frame)


def values(desired, real, frame: ToleranceFrame = NOMINAL_FRAME) -> dict[str, float]:
    tol = Composed(full(p, frame) for p in PROJECTIONS)
    return dict(zip(PROJECTIONS, tol.error(desired, real)))


rotvecs = st.tuples(*[st.floats(-2.0, 2.0)] * 3)
translations = st.tuples(*[st.floats(-2.0, 2.0)] * 3)
poses = st.builds(lambda r, t: pose([*r, *t]), rotvecs, translations)
frames = st.sampled_from([NOMINAL_FRAME, WORLD_FRAME, ToleranceFrame.fixed("table", pose([0.4, -1.0, 0.3, 1, 2, 3]))])


@st.composite
def feasible(draw, names=PROJECTIONS, min_width=0.1):
    """A composed tolerance on several projections whose intervals all contain a random witness deviation."""
    desired = draw(poses)
    witness = desired @ pose(draw(st.tuples(*[st.floats(-1.0, 1.0)] * 3, *[st.floats(-0.3, 0.3)] * 3)))
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=5))
    parts = []
    for name in chosen:
        frame = draw(frames)
        value = float(full(name, frame).error(desired, witness)[0])
        below, above = draw(st.floats(min_width / 2, 0.5)), draw(st.floats(min_width / 2, 0.5))
        lo_min, hi_max = RANGE[name]
        parts.append(ProjectionTolerance(name, Interval(max(lo_min, value - below), min(hi_max, value + above)), frame))
    return desired, Composed(parts)
