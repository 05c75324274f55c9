"""The random robots and goal tolerances the reach proofs' tests share (test_reach_proof.py,
test_reach_proof_boxes.py, test_family_proof.py, test_proof_fused.py, test_proof_outputs.py)."""

from __future__ import annotations

import math

import numpy as np
from conftest import reach_test_spaces
from hypothesis import given
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search.filtering.reach_proof import rotation_slack

DBS, SPACES = reach_test_spaces()
TOLERANCES = {
    "exp2": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, math.pi / 4]]),
    "tight": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-4, 1e-4]] * 3 + [[0.0, math.radians(0.1)]]),
    "rotation vector": tolerance_from_json(
        ["x", "y", "z", "N_x", "N_y", "N_z"], [[-2e-3, 2e-3]] * 3 + [[-0.2, 0.2], [-0.1, 0.1], [-0.3, 0.3]]
    ),
    "position only": tolerance_from_json(["x", "y", "z"], [[-1e-3, 1e-3]] * 3),
}


def within(pose: np.ndarray, name: str, rng: np.random.Generator) -> np.ndarray:
    """A goal the pose satisfies under the tolerance: moved and turned by up to (almost) what it allows."""
    goal = pose.copy()
    tol = TOLERANCES[name]
    box = {"exp2": 1e-3, "tight": 1e-4, "rotation vector": 2e-3, "position only": 1e-3}[name]
    shift, axis = rng.normal(size=3), rng.normal(size=3)
    goal[:3, 3] -= shift / np.linalg.norm(shift) * box * rng.uniform(0, 0.999)  # within the box in any frame
    angle = min(rotation_slack(tol), 0.099 if name == "rotation vector" else math.pi) * rng.uniform(0, 0.999)
    goal[:3, :3] = pose[:3, :3] @ Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle).as_matrix().T
    assert tol.valid(goal, pose), name
    return goal


# a box of a random chain of a module set, at a random goal and tolerance, through numpy's or the compiled bound
BOX_CASES = given(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    width=st.sampled_from([0.01, 0.1, 0.5, math.pi]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
    compiled=st.booleans(),
)
