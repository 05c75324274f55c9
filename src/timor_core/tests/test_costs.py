"""Cost functions: descriptors (the reference's format), arithmetic, values on solutions and on assemblies.

The values on the analytic trajectory below were measured with the reference toolbox (timor-python 1.1.1) on the
same robot and trajectory. Its friction torque uses a smooth sign (``sin(atan(100 dq))``) where timor uses the
sign itself, so the terms that include friction agree to about 1e-4 (relative); the others agree to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from timor_core import InputError, ModuleAssembly
from timor_core.kinematics.trajectory import Trajectory
from timor_core.task import Task
from timor_core.task.costs import (
    COSTS,
    ComposedCost,
    CostFunction,
    CycleTime,
    GoalsFulfilled,
    ModuleCost,
    NumJoints,
    RobotMass,
)
from timor_core.task.solution import Solution

ROBCO_6DOF = ["base", "J", "L_250", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"]

#: measured with timor-python 1.1.1 on the trajectory of ``sine_trajectory`` and the robot ROBCO_6DOF
REFERENCE = {
    "cyc": 1.0,
    "mechEnergy": 103.22687632053955,
    "linkMechEnergy": 54.096399699661404,
    "qDist": 12.368017551983483,
    "effort": 77.40618051756144,
    "mass": 18.58,
    "numJ": 6.0,
}
FRICTION_TERMS = {"mechEnergy", "effort"}


@pytest.fixture(scope="module")
def assembly(robco) -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(robco, ROBCO_6DOF)


def sine_trajectory() -> Trajectory:
    t = np.linspace(0.0, 1.0, 101)
    amp = np.array([0.8, 0.5, 0.6, 0.4, 0.7, 0.9])
    w = np.array([1.0, 2.0, 3.0, 1.5, 2.5, 0.5]) * np.pi
    ph = np.array([0.0, 0.3, 0.6, 0.9, 1.2, 1.5])
    arg = w * t[:, None] + ph
    return Trajectory(t, amp * np.sin(arg), amp * w * np.cos(arg), -amp * w**2 * np.sin(arg))


def make_task(goals=()) -> Task:
    return Task.from_json_data(
        {"header": {"ID": "costs_task", "timeStepSize": 0.01}, "obstacles": [], "goals": list(goals), "constraints": []}
    )


@pytest.fixture(scope="module")
def solution(assembly) -> Solution:
    return Solution(make_task(), assembly, sine_trajectory())


# -- descriptors -----------------------------------------------------------------------------------


def test_descriptor_parsing_and_sorted_output():
    cost = CostFunction.from_descriptor("mass_0.5,cyc,numJ_2")
    assert isinstance(cost, ComposedCost)
    assert cost.descriptor() == "cyc,mass_0.5,numJ_2.0"  # what the reference writes for the same cost
    assert [(t.name, t.weight) for t in cost.terms] == [("mass", 0.5), ("cyc", 1.0), ("numJ", 2.0)]
    again = CostFunction.from_descriptor(cost.descriptor())
    assert again == cost and again.descriptor() == cost.descriptor()
    assert CostFunction.from_descriptor("numJ_2,cyc, mass_0.5").descriptor() == cost.descriptor()


def test_single_term_and_default_weights():
    mass = CostFunction.from_descriptor("mass")
    assert isinstance(mass, RobotMass) and mass.weight == 1.0 and mass.descriptor() == "mass"
    assert CostFunction.from_descriptor("mass_1").descriptor() == "mass"
    # as in the reference every default weight is +1, fulfillN included: "fulfillN_-1" is the reward
    assert CostFunction.from_descriptor("fulfillN").weight == 1.0
    assert CostFunction.from_descriptor("fulfillN_-1").descriptor() == "fulfillN_-1.0"
    for name in ("cyc", "mechEnergy", "linkMechEnergy", "qDist", "effort", "mass", "numJ", "fulfillN", "fulfillP"):
        assert name in COSTS  # every name of the CoBRA descriptor format
    assert "moduleCost" in COSTS


def test_empty_descriptor_is_zero_cost(solution, assembly):
    for text in ("", None, "  "):
        cost = CostFunction.from_descriptor(text)
        assert cost.descriptor() == ""
        assert cost.evaluate(solution) == 0.0
        assert cost.evaluate_assembly(assembly) == 0.0


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("mass,foo", "'foo'"),
        ("mass,,cyc", "token 1"),
        ("mass_x", "'x'"),
        ("mass_nan", "finite"),
        ("Mass", "'Mass'"),
    ],
)
def test_bad_descriptors_name_the_token(text, needle):
    with pytest.raises(InputError) as err:
        CostFunction.from_descriptor(text)
    assert needle in str(err.value)


def test_arithmetic():
    a, b = RobotMass(), CycleTime(2.0)
    assert (a + b).descriptor() == "cyc_2.0,mass"
    assert (a - b).descriptor() == "cyc_-2.0,mass"
    assert (3 * a).descriptor() == "mass_3.0"
    assert (a * 3).descriptor() == "mass_3.0"
    assert (b / 4).descriptor() == "cyc_0.5"
    assert (-a).descriptor() == "mass_-1.0"
    assert (2 * (a + b)).descriptor() == "cyc_4.0,mass_2.0"
    assert ((a + b) + NumJoints()).descriptor() == "cyc_2.0,mass,numJ"
    with pytest.raises(InputError):
        RobotMass(float("inf"))


# -- values ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_values_agree_with_the_reference(solution, name):
    value = COSTS[name]().evaluate(solution)
    rel = 1e-4 if name in FRICTION_TERMS else 1e-9
    assert value == pytest.approx(REFERENCE[name], rel=rel)


def test_values_follow_their_definitions(solution, assembly):
    tr = solution.trajectory
    dt = np.diff(tr.t)
    tau = np.array([solution.robot.id(q, dq, ddq, friction=True) for q, dq, ddq in zip(tr.q, tr.dq, tr.ddq)])
    energy = np.sum(np.abs(np.einsum("ij,ij->i", tau, tr.dq))[:-1] * dt)
    assert COSTS["mechEnergy"]().evaluate(solution) == pytest.approx(energy, rel=1e-12)
    effort = np.sum(np.abs(tau).sum(axis=1) * np.append(dt, dt[-1]))
    assert COSTS["effort"]().evaluate(solution) == pytest.approx(effort, rel=1e-12)
    assert COSTS["qDist"]().evaluate(solution) == pytest.approx(np.abs(np.diff(tr.q, axis=0)).sum())
    assert COSTS["cyc"]().evaluate(solution) == 1.0
    assert ModuleCost().evaluate(solution) == pytest.approx(sum(m.cost for m in assembly.modules))
    combined = CostFunction.from_descriptor("mass_0.5,cyc,numJ_2")
    assert combined.evaluate(solution) == pytest.approx(0.5 * assembly.mass + 1.0 + 2 * 6)
    assert Solution(make_task(), assembly, tr, cost_function="mass_0.5,cyc,numJ_2").cost == pytest.approx(
        combined.evaluate(solution)
    )


def test_goals_fulfilled(assembly):
    tr = sine_trajectory()
    robot = assembly.robot
    reached = robot.fk(tr.q[50]).tolist()
    far = np.eye(4)
    far[:3, 3] = [5.0, 5.0, 5.0]
    task = make_task(
        [
            {"ID": "a", "type": "at", "goalPose": {"nominal": reached}},
            {"ID": "b", "type": "at", "goalPose": {"nominal": far.tolist()}},
        ]
    )
    sol = Solution(task, assembly, tr)
    assert GoalsFulfilled().evaluate(sol) == 1.0
    assert GoalsFulfilled(-1).evaluate(sol) == -1.0
    assert COSTS["fulfillP"]().evaluate(sol) == 0.5


def test_assembly_costs(assembly):
    assert RobotMass().evaluate_assembly(assembly) == pytest.approx(assembly.mass)
    assert NumJoints().evaluate_assembly(assembly) == 6.0
    assert ModuleCost().evaluate_assembly(assembly) == pytest.approx(assembly.cost)
    cost = CostFunction.from_descriptor("mass_0.5,numJ_2,moduleCost_0.01")
    assert not cost.needs_trajectory
    assert cost.evaluate_assembly(assembly) == pytest.approx(0.5 * assembly.mass + 12 + 0.01 * assembly.cost)
    for text in ("cyc", "mass,effort", "fulfillN"):
        cost = CostFunction.from_descriptor(text)
        assert cost.needs_trajectory
        with pytest.raises(InputError) as err:
            cost.evaluate_assembly(assembly)
        assert "needs a solution" in str(err.value) and "mass" in str(err.value)
    assert math.isfinite(CostFunction.from_descriptor("mass").evaluate_assembly(assembly))
