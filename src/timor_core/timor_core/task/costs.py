"""Cost functions of solutions (and assemblies), composable with weights and written as CoBRA descriptors.

A descriptor is a comma-separated list of ``name`` or ``name_weight`` tokens, e.g. ``"mass_0.5,cyc,numJ_2"``:
the cost is the weighted sum of the named terms. The names and their meaning follow the CoBRA benchmark (and
the reference toolbox, timor-python 1.1.1), plus ``moduleCost``:

========================  =====================================================================  ==============
name                      value (unweighted)                                                     needs
========================  =====================================================================  ==============
``cyc``                   cycle time: the trajectory's last time (s)                             trajectory
``mechEnergy``            mechanical energy, sum over samples of ``|tau · dq| * dt`` (J), with   trajectory
                          tau including rotor inertia and joint friction
``linkMechEnergy``        the same without rotor inertia and friction (energy given to links)    trajectory
``qDist``                 joint-space distance: sum over samples and joints of ``|q[i+1]-q[i]|`` trajectory
                          (mixes rad and m, as in the reference)
``effort``                sum over samples and joints of ``|tau| * dt`` (tau as for mechEnergy)  trajectory
``fulfillN``              number of goals achieved (give it a negative weight for a reward)      solution
``fulfillP``              fraction of goals achieved                                             solution
``mass``                  robot mass (kg)                                                        assembly
``numJ``                  number of actuated joints                                              assembly
``moduleCost``            sum of the modules' header ``cost`` (timor's addition)                 assembly
========================  =====================================================================  ==============

Every default weight is 1, as in the reference — including ``fulfillN``/``fulfillP``, so ``"fulfillN"`` means a
*penalty* per achieved goal there too; write ``"fulfillN_-1"`` for a reward. ``dt`` of sample ``i`` is
``t[i+1] - t[i]`` (the last sample has no interval for the energy; for the effort it reuses the last interval,
which equals the reference's ``sum(|tau|) * (t[1] - t[0])`` on uniformly sampled trajectories).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from timor_core.errors import InputError

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

Solution = Any  # a timor_core.task.solution.Solution (it imports this module)

__all__ = [
    "CostFunction",
    "ComposedCost",
    "CycleTime",
    "MechanicalEnergy",
    "LinkSideMechanicalEnergy",
    "QDist",
    "Effort",
    "GoalsFulfilled",
    "GoalsFulfilledFraction",
    "RobotMass",
    "NumJoints",
    "ModuleCost",
    "COSTS",
    "DEFAULT_DESCRIPTOR",
    "MAX_WEIGHT",
]

#: What ``timor solve`` reports when no cost is given.
DEFAULT_DESCRIPTOR = "mass"

MAX_WEIGHT = 1e6
"""Largest magnitude of a cost weight: a weighted sum of masses, times and energies stays finite (``mass_1e308``
overflowed to inf and crashed the cost-ordered search)."""
_RANGE = f"from -{MAX_WEIGHT:g} to {MAX_WEIGHT:g}"


def _format_weight(weight: float) -> str:
    """A short, deterministic spelling of a weight (``2.0``, ``0.5``, ``-1.0``), as the reference writes it."""
    return repr(float(f"{weight:.12g}"))


class CostFunction:
    """A weighted cost term; subclasses define ``name`` and ``value``. Evaluate with ``evaluate(solution)``.

    Costs add up (``a + b``, ``a - b``), scale (``2 * a``, ``a / 2``) and negate (``-a``); the result of any of
    these is a :class:`ComposedCost` or a re-weighted copy.
    """

    name: ClassVar[str] = ""
    default_weight: ClassVar[float] = 1.0
    #: "trajectory": needs a solution's trajectory; "solution": needs a solution; "assembly": an assembly suffices
    needs: ClassVar[str] = "trajectory"
    #: True if the value is a plain sum of one number per module (``modules_value`` of a list is the sum of the
    #: values of its modules): a search can then walk its space cheapest first without pricing all of it
    additive: ClassVar[bool] = False

    def __init__(self, weight: float | None = None) -> None:
        w = self.default_weight if weight is None else weight
        if isinstance(w, bool) or not isinstance(w, (int, float, np.integer, np.floating)) or not abs(w) <= MAX_WEIGHT:
            raise InputError(f"the weight of cost {self.name!r} must be a finite number {_RANGE}", value=w)
        self.weight = float(w)

    # -- values ------------------------------------------------------------------------------------
    def value(self, solution: Solution) -> float:
        """The unweighted value for a solution."""
        raise NotImplementedError

    def assembly_value(self, assembly: ModuleAssembly) -> float:
        """The unweighted value for an assembly alone (only for terms that need no trajectory)."""
        raise InputError(
            f"cost {self.name!r} needs a solution with a trajectory; on an assembly alone only"
            f" {', '.join(n for n, c in COSTS.items() if c.needs == 'assembly')} can be evaluated",
            value=self.descriptor(),
        )

    def evaluate(self, solution: Solution) -> float:
        """The weighted cost of a solution."""
        return self.weight * float(self.value(solution))

    def evaluate_assembly(self, assembly: ModuleAssembly) -> float:
        """The weighted cost of an assembly; raises InputError for terms that need a trajectory."""
        return self.weight * float(self.assembly_value(assembly))

    def modules_value(self, modules: Sequence[Any]) -> float | None:
        """The unweighted value from the modules alone, if the term is a sum over module properties (else None).

        Equal, to the last bit, to :meth:`assembly_value` of the assembly of these modules (same sum, same order),
        so a search can compare it with a bound before it builds the assembly.
        """
        return None

    def evaluate_modules(self, modules: Sequence[Any]) -> float | None:
        """The weighted :meth:`modules_value` (None: the assembly is needed)."""
        value = self.modules_value(modules)
        return None if value is None else self.weight * float(value)

    def evaluate_serial(self, db: Any, ids: Sequence[str], base_placement: Any = None) -> float:
        """The weighted cost of the serial assembly of module ``ids``: from the modules alone where the cost allows
        it (the same value, without building the assembly), else from the assembly built."""
        value = self.evaluate_modules([db.by_id[m] for m in ids])
        if value is None:
            from timor_core.model.assembly import ModuleAssembly

            value = self.evaluate_assembly(ModuleAssembly.from_serial_modules(db, ids, base_placement))
        return float(value)

    @property
    def terms(self) -> tuple[CostFunction, ...]:
        """The atomic terms (with their effective weights)."""
        return (self,)

    @property
    def needs_trajectory(self) -> bool:
        """True if some term cannot be evaluated on an assembly alone."""
        return any(t.needs != "assembly" for t in self.terms)

    # -- descriptors -------------------------------------------------------------------------------
    def descriptor(self, scale: float = 1.0) -> str:
        """``name`` or ``name_weight`` (the weight only when it differs from the default)."""
        weight = self.weight * scale
        if float(f"{weight:.12g}") == self.default_weight:
            return self.name
        return f"{self.name}_{_format_weight(weight)}"

    @staticmethod
    def from_descriptor(text: str | None) -> CostFunction:
        """Parse ``"name"`` / ``"name_weight"`` tokens separated by commas; ``""`` is the zero cost.

        Unknown names and bad weights raise :class:`~timor_core.errors.InputError` naming the token.
        """
        if text is None or not str(text).strip():
            return ComposedCost()
        if not isinstance(text, str):
            raise InputError("a cost descriptor must be a string", value=text)
        costs: list[CostFunction] = []
        for k, raw in enumerate(text.split(",")):
            token = raw.strip()
            where = f"cost descriptor token {k} {token!r}"
            if not token:
                raise InputError(f"{where} is empty", value=text)
            name, sep, weight_text = token.partition("_")
            cls = COSTS.get(name)
            if cls is None:
                raise InputError(f"{where}: unknown cost {name!r} (known: {', '.join(COSTS)})", value=text)
            weight = None
            if sep:
                try:
                    weight = float(weight_text)
                except ValueError:
                    raise InputError(f"{where}: the weight {weight_text!r} is not a number", value=text) from None
                if not abs(weight) <= MAX_WEIGHT:
                    raise InputError(f"{where}: the weight must be a finite number {_RANGE}", value=text)
            costs.append(cls(weight))
        return costs[0] if len(costs) == 1 else ComposedCost(*costs)

    # -- arithmetic --------------------------------------------------------------------------------
    def _reweighted(self, factor: float) -> CostFunction:
        return type(self)(self.weight * factor)

    def __add__(self, other: object) -> CostFunction:
        if isinstance(other, CostFunction):
            return ComposedCost(self, other)
        return NotImplemented

    def __sub__(self, other: object) -> CostFunction:
        if isinstance(other, CostFunction):
            return ComposedCost(self, -other)
        return NotImplemented

    def __mul__(self, factor: object) -> CostFunction:
        if isinstance(factor, (int, float)) and not isinstance(factor, bool):
            return self._reweighted(float(factor))
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, factor: object) -> CostFunction:
        if isinstance(factor, (int, float)) and not isinstance(factor, bool):
            return self._reweighted(1.0 / float(factor))
        return NotImplemented

    def __neg__(self) -> CostFunction:
        return self._reweighted(-1.0)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CostFunction):
            return self.descriptor() == other.descriptor()
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"CostFunction({self.descriptor()!r})"

    def __str__(self) -> str:
        return self.descriptor()


class ComposedCost(CostFunction):
    """The weighted sum of several terms (the empty sum is the zero cost)."""

    name: ClassVar[str] = ""

    def __init__(self, *costs: CostFunction, weight: float = 1.0) -> None:
        super().__init__(weight)
        self._terms: list[CostFunction] = []
        for c in costs:
            if not isinstance(c, CostFunction):
                raise InputError("a composed cost takes cost functions", value=c)
            self._terms.extend(c.terms if isinstance(c, ComposedCost) else (c,))

    @property
    def needs(self) -> str:  # type: ignore[override]
        order = ("assembly", "solution", "trajectory")
        return max((t.needs for t in self._terms), key=order.index, default="assembly")

    @property
    def terms(self) -> tuple[CostFunction, ...]:
        return tuple(t._reweighted(self.weight) for t in self._terms)

    def _reweighted(self, factor: float) -> CostFunction:
        return ComposedCost(*self._terms, weight=self.weight * factor)

    def value(self, solution: Solution) -> float:
        return sum(t.evaluate(solution) for t in self._terms)

    def assembly_value(self, assembly: ModuleAssembly) -> float:
        return sum(t.evaluate_assembly(assembly) for t in self._terms)

    def modules_value(self, modules: Sequence[Any]) -> float | None:
        values = [t.evaluate_modules(modules) for t in self._terms]
        return None if any(v is None for v in values) else sum(values)  # type: ignore[arg-type]

    def descriptor(self, scale: float = 1.0) -> str:
        """The terms' descriptors, sorted (deterministic), joined by commas."""
        return ",".join(sorted(t.descriptor(self.weight * scale) for t in self._terms))


# -- the terms -------------------------------------------------------------------------------------


def _intervals(t: np.ndarray) -> np.ndarray:
    """Per-sample time intervals ``t[i+1] - t[i]`` (the last sample: 0)."""
    return np.append(np.diff(t), 0.0) if t.size else t


class CycleTime(CostFunction):
    """Duration of the solution's trajectory (s)."""

    name = "cyc"

    def value(self, solution: Solution) -> float:
        return float(solution.trajectory.t[-1])


class MechanicalEnergy(CostFunction):
    """Mechanical energy of the motors: ``sum_i |tau_i · dq_i| (t[i+1] - t[i])``, tau with rotor inertia, friction."""

    name = "mechEnergy"
    motor_inertia: ClassVar[bool] = True
    friction: ClassVar[bool] = True

    def value(self, solution: Solution) -> float:
        traj = solution.trajectory
        tau = solution.torques(motor_inertia=self.motor_inertia, friction=self.friction)
        power = np.abs(np.einsum("ij,ij->i", tau, traj.dq))
        return float(np.sum(power * _intervals(traj.t)))


class LinkSideMechanicalEnergy(MechanicalEnergy):
    """Mechanical energy delivered to the links (no rotor inertia, no friction)."""

    name = "linkMechEnergy"
    motor_inertia = False
    friction = False


class QDist(CostFunction):
    """Joint-space distance travelled: ``sum |q[i+1] - q[i]|`` over samples and joints."""

    name = "qDist"

    def value(self, solution: Solution) -> float:
        return float(np.sum(np.abs(np.diff(solution.trajectory.q, axis=0))))


class Effort(CostFunction):
    """Integral of the absolute joint torques: ``sum_i sum_j |tau_ij| dt_i``."""

    name = "effort"

    def value(self, solution: Solution) -> float:
        t = solution.trajectory.t
        if t.size < 2:
            return 0.0
        dt = np.diff(t)
        dt = np.append(dt, dt[-1])
        tau = solution.torques(motor_inertia=True, friction=True)
        return float(np.sum(np.abs(tau).sum(axis=1) * dt))


class GoalsFulfilled(CostFunction):
    """Number of achieved goals (use a negative weight to reward them)."""

    name = "fulfillN"
    needs = "solution"

    def value(self, solution: Solution) -> float:
        return float(sum(1 for g in solution.task.goals if solution.achieved(g)))


class GoalsFulfilledFraction(GoalsFulfilled):
    """Fraction of the task's goals achieved (0 for a task without goals)."""

    name = "fulfillP"

    def value(self, solution: Solution) -> float:
        n = len(solution.task.goals)
        return super().value(solution) / n if n else 0.0


class _AssemblyCost(CostFunction):
    needs = "assembly"

    def value(self, solution: Solution) -> float:
        return self.assembly_value(solution.assembly)


class RobotMass(_AssemblyCost):
    """Total mass of the robot (kg)."""

    name = "mass"
    additive = True

    def assembly_value(self, assembly: ModuleAssembly) -> float:
        return float(assembly.mass)

    def modules_value(self, modules: Sequence[Any]) -> float | None:
        return float(sum([m.mass for m in modules]))  # (a list: the same sum, in the same order, sooner)


class NumJoints(_AssemblyCost):
    """Number of actuated joints."""

    name = "numJ"
    additive = True

    def assembly_value(self, assembly: ModuleAssembly) -> float:
        return float(assembly.dof)

    def modules_value(self, modules: Sequence[Any]) -> float | None:
        return float(sum(m.dof for m in modules))


class ModuleCost(_AssemblyCost):
    """Sum of the modules' header costs (timor's addition to the CoBRA names)."""

    name = "moduleCost"
    additive = True

    def assembly_value(self, assembly: ModuleAssembly) -> float:
        return float(assembly.cost)

    def modules_value(self, modules: Sequence[Any]) -> float | None:
        return float(sum(m.cost for m in modules))


#: Every cost term by its descriptor name.
COSTS: dict[str, type[CostFunction]] = {
    c.name: c
    for c in (
        CycleTime,
        MechanicalEnergy,
        LinkSideMechanicalEnergy,
        QDist,
        Effort,
        RobotMass,
        NumJoints,
        GoalsFulfilled,
        GoalsFulfilledFraction,
        ModuleCost,
    )
}


def parse_cost(value: Any) -> CostFunction:
    """A CostFunction from a CostFunction, a descriptor string or None (the zero cost)."""
    if isinstance(value, CostFunction):
        return value
    return CostFunction.from_descriptor(value)
