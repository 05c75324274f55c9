"""A timor-python 1.1.1 script moving over (README, "Moving from timor-python"): the reference's robot and assembly
names answer as timor's, a call in the reference's argument order is refused saying timor's, and the documented flags
give the reference's dynamics. The side-by-side checks run the reference where ../refvenv and the CoBRA data are on
this machine and skip cleanly otherwise."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError
from timor_core.task import Task

ROOT = Path(__file__).resolve().parents[3]
REF_PYTHON = ROOT.parent / "refvenv" / "bin" / "python"
BENCH_REF = ROOT.parent / "shared" / "bench-ref"
IMPROV = ROOT.parent / "shared" / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
IMPROV_IDS = ["1", "21", "4", "21", "5", "23", "7", "12"]


@pytest.fixture(scope="module")
def robco():
    db = ModulesDB.from_name("robco_like")
    return ModuleAssembly.from_serial_modules(db, ["base", "J", "L_150", "J", "I_300", "J", "L_100", "J", "gripper"])


def test_reference_limit_and_check_names(robco):
    robot = robco.robot
    assert np.array_equal(robot.joint_velocity_limits, robot.velocity_limits)
    assert np.array_equal(robot.joint_acceleration_limits, robot.acceleration_limits)
    assert np.array_equal(robot.joint_torque_limits, robot.torque_limits)
    lo, hi = robot.joint_limits
    inside = np.clip(np.zeros(robot.dof), lo, hi)
    outside = inside.copy()
    outside[1] = hi[1] + 0.1 if np.isfinite(hi[1]) else lo[1] - 0.1
    assert robot.q_in_joint_limits(inside) and not robot.q_in_joint_limits(outside)
    tau = robot.static_torque(robot.random_configuration(3))
    limits = robot.torque_limits
    assert robot.tau_in_torque_limits(0.5 * limits) and robot.tau_in_torque_limits(-limits)
    assert not robot.tau_in_torque_limits(np.where(np.arange(robot.dof) == 2, -1.01 * limits, 0.0))
    assert robot.tau_in_torque_limits(tau) == bool(np.all(np.abs(tau) <= limits))


def test_assembly_counts_and_ids(robco):
    assert robco.nModules == 9 and robco.nJoints == 4 == robco.robot.dof
    assert robco.original_module_ids == ("base", "J", "L_150", "J", "I_300", "J", "L_100", "J", "gripper")


def test_update_configuration_then_stateful_calls(robco):
    task = Task.from_name("pick_and_place")
    robot = ModuleAssembly.from_serial_modules(robco.db, robco.module_ids).robot
    for seed in range(6):
        q = robot.random_configuration(seed)
        robot.update_configuration(q)
        assert np.array_equal(robot.q, q)
        assert np.allclose(robot.fk(), robot.fk(q))
        assert robot.has_collisions(task) == robot.has_collision(q, task)
        assert robot.has_collisions(task, safety_margin=0.05) == robot.has_collision(q, task, 0.05)
        assert robot.has_collisions() == robot.has_self_collision(q)
    with pytest.raises(InputError, match=r"no velocity.*tcp_velocity\(q, dq\)"):
        robot.update_configuration(q, np.zeros(robot.dof))


def test_collisions_in_reference_order_says_timor_order(robco):
    task = Task.from_name("pick_and_place")
    robot = robco.robot
    for call in (robot.collisions, robot.has_collision):
        with pytest.raises(InputError, match=r"takes the configuration first.*robot\.q"):
            call(task)
        with pytest.raises(InputError, match=r"takes the configuration first"):
            call(task, 0.01)


REF_SCRIPT = """
import json, sys
from pathlib import Path
import numpy as np
import timor_offline  # noqa: F401
from timor.Module import ModulesDB, ModuleAssembly
db = ModulesDB.from_json_file(Path(sys.argv[1]))
a = ModuleAssembly.from_serial_modules(db, sys.argv[2].split(","))
r = a.robot
qs = json.loads(sys.argv[3])
out = {"nJoints": a.nJoints, "nModules": a.nModules, "ids": list(a.original_module_ids),
       "vel": r.joint_velocity_limits.tolist(), "tor": r.joint_torque_limits.tolist(), "rows": []}
for q in qs:
    q = np.array(q)
    dq, ddq = 0.5 * np.ones(r.dof), np.ones(r.dof)
    tau = r.static_torque(q)
    out["rows"].append({"id": r.id(q, dq, ddq).tolist(), "fd": r.fd(tau * 1.1, q, dq).tolist(),
                        "in_limits": bool(r.q_in_joint_limits(q)), "tau_ok": bool(r.tau_in_torque_limits(tau * 3))})
print(json.dumps(out))
"""


def test_reference_side_by_side_dynamics_and_names():
    if not (REF_PYTHON.is_file() and (BENCH_REF / "timor_offline.py").is_file() and IMPROV.is_file()):
        pytest.skip("needs ../refvenv (timor-python 1.1.1), ../shared/bench-ref and the IMPROV set")
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(IMPROV), IMPROV_IDS)
    robot = assembly.robot
    rng = np.random.default_rng(7)
    qs = [rng.uniform(-2.5, 2.5, robot.dof) for _ in range(4)]
    run = subprocess.run(
        [str(REF_PYTHON), "-c", REF_SCRIPT, str(IMPROV), ",".join(IMPROV_IDS), json.dumps([q.tolist() for q in qs])],
        cwd=BENCH_REF, capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    ref = json.loads(run.stdout.strip().splitlines()[-1])
    assert (assembly.nJoints, assembly.nModules, list(assembly.original_module_ids)) == (
        ref["nJoints"], ref["nModules"], ref["ids"])  # fmt: skip
    assert np.allclose(robot.joint_velocity_limits, ref["vel"]) and np.allclose(robot.joint_torque_limits, ref["tor"])
    dq, ddq = 0.5 * np.ones(robot.dof), np.ones(robot.dof)
    for q, row in zip(qs, ref["rows"]):
        # README: the reference's id adds friction by default, its fd subtracts it and leaves rotor inertia out
        assert np.allclose(robot.id(q, dq, ddq, friction=True), row["id"], rtol=1e-3, atol=1e-3)
        tau = 1.1 * robot.static_torque(q)
        fd = robot.fd(tau, q, dq, motor_inertia=False, friction=True)
        assert np.allclose(fd, row["fd"], rtol=2e-3, atol=1e-3)  # its friction's sign is sin(atan(100 dq))
        assert robot.q_in_joint_limits(q) == row["in_limits"]
        assert robot.tau_in_torque_limits(3 * robot.static_torque(q)) == row["tau_ok"]


def test_readme_migration_states_reference_dynamics_flags():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Moving from timor-python", 1)[1].split("\n## ", 1)[0]
    assert "robot.id(q, dq, ddq, friction=True)" in section
    assert "robot.fd(tau, q, dq, motor_inertia=False, friction=True)" in section


def test_readme_migration_imports_run():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Moving from timor-python", 1)[1].split("\n## ", 1)[0]
    assert "`from timor_core.task import Task" in section  # a moving script needs Task's import first
    assert "`from timor_core.common.transforms import translation" in section  # and poses without Transformation
    imports = re.findall(r"`(from timor_core[\w.]* import [\w, ]+)`", section)
    assert len(imports) >= 3
    for line in imports:
        exec(line, {})  # each import the table shows works as written


@pytest.fixture(scope="module")
def solved():
    from timor_core.kinematics.trajectory import Trajectory
    from timor_core.task.solution import Solution

    task = Task.from_name("pick_and_place")
    db = ModulesDB.from_name("robco_like")
    assembly = ModuleAssembly.from_serial_modules(db, ["base", "J", "L_250", "J", "L_100", "J", "gripper"])
    q = np.zeros((5, assembly.dof))
    q[:, 0] = np.linspace(0.0, 0.4, 5)
    trajectory = Trajectory.from_positions(np.linspace(0.0, 0.4, 5), q)
    return Solution(task, assembly, trajectory, cost_function="mass")


def test_solution_reference_names(solved):
    tr = solved.trajectory
    assert np.array_equal(solved.q, tr.q) and np.array_equal(solved.dq, tr.dq) and np.array_equal(solved.ddq, tr.ddq)
    assert np.array_equal(solved.time_steps, tr.t) and solved.time_steps.shape == (5,)
    assert solved.module_assembly is solved.assembly
    missed = [g for g in solved.task.goals if not solved.achieved(g)]
    assert missed and solved.failed_goals == tuple(missed)  # a 0.4 rad sweep of one joint meets no goal
    assert solved.t_goals == {g.id: solved.goal_time(g) for g in solved.task.goals if solved.achieved(g)}
    assert json.loads(solved.to_json_string()) == json.loads(json.dumps(solved.to_json_data()))


def test_solution_t_goals_are_the_given_times(solved):
    from timor_core.task.solution import Solution

    first = solved.task.goals[0].id
    given = Solution(solved.task, solved.assembly, solved.trajectory, goal_times={first: 0.2}, cost_function="mass")
    assert given.t_goals == {first: 0.2}
    assert given.failed_goals == tuple(g for g in solved.task.goals if not given.achieved(g))


def test_readme_migration_says_solution_torques_is_a_method(solved):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Moving from timor-python", 1)[1].split("\n## ", 1)[0]
    assert "`solution.torques` is a method" in section and "`solution.tau` is the property" in section
    assert callable(solved.torques) and np.array_equal(solved.torques(), solved.tau)


def test_task_header_as_dict_and_goal_order_name():
    from timor_core.task import GoalOrder, GoalOrderConstraint, TaskHeader

    task = Task({"ID": "moved", "taskName": "moved over", "timeStepSize": 0.02, "tags": ["demo"]})
    header = task.header
    assert (task.id, header.name, header.time_step, header.tags) == ("moved", "moved over", 0.02, ["demo"])
    assert Task(TaskHeader("moved")).header.time_step == 0.01
    with pytest.raises(InputError, match="ID"):
        Task({"taskName": "no ID"})
    with pytest.raises(InputError, match="TaskHeader or a dict of the CoBRA header fields"):
        Task("moved")  # type: ignore[arg-type]
    assert GoalOrderConstraint is GoalOrder and GoalOrderConstraint(["a", "b"]).order == ["a", "b"]


def test_to_urdf_reference_arguments(robco, tmp_path):
    import pinocchio as pin

    out = tmp_path / "robot.urdf"
    text = robco.to_urdf("moved", out)  # timor-python's to_urdf(name, write_to)
    assert out.read_text(encoding="utf-8") == text and 'robot name="moved"' in text
    model = pin.buildModelFromUrdf(str(out))
    data = model.createData()
    q = robco.robot.random_configuration(4)
    pin.framesForwardKinematics(model, data, q)
    assert np.allclose(data.oMf[model.getFrameId("tool0")].homogeneous, robco.robot.fk(q))
    with pytest.raises(InputError, match=r"copies no meshes.*mesh_uri"):
        robco.to_urdf("moved", handle_missing_assets="copy")
    with pytest.raises(InputError, match="not both"):
        robco.to_urdf("moved", wrl="keep", replace_wrl=True)


def test_to_urdf_replace_wrl_is_wrl_mode():
    if not IMPROV.is_file():
        pytest.skip("needs the IMPROV set (../shared), whose collision meshes are VRML")
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(IMPROV), IMPROV_IDS)
    assert ".wrl" in assembly.to_urdf("a", replace_wrl=False) == assembly.to_urdf("a", wrl="keep")
    assert ".wrl" not in assembly.to_urdf("a", replace_wrl=True) == assembly.to_urdf("a")


def test_db_by_id_and_by_name_are_indexed_as_in_the_reference():
    import pickle

    from timor_core.errors import UnknownModuleError

    db = ModulesDB.from_name("robco_like")
    assert db.by_id["J"] is db.by_id("J") is db["J"]
    assert set(db.by_id) == set(db.ids) and len(db.by_id) == len(db)
    assert "J" in db.by_id and "nope" not in db.by_id and db.by_id.get("nope") is None
    name = db["J"].name
    assert db.by_name[name] is db.by_name(name) is db["J"] and name in db.by_name
    assert dict(db.by_name.items()) == {m.name: m for m in db}
    with pytest.raises(UnknownModuleError, match="no module with ID 'nope'"):
        db.by_id["nope"]
    with pytest.raises(InputError, match="read-only"):
        db.by_id["J2"] = db["J"]
    with pytest.raises(InputError, match="read-only"):
        db.by_name.update({})
    assert db.by_id("J") is db["J"] and "J2" not in db.by_id
    copy = pickle.loads(pickle.dumps(db))
    assert copy.by_id["J"] is copy["J"] and copy.by_id["J"].id == "J"


def test_ik_reference_keywords():
    db = ModulesDB.from_name("geometric_primitive_modules")
    robot = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef")).robot
    rng = np.random.default_rng(11)
    q_bad = next(q for q in (robot.random_configuration(rng) for _ in range(2000)) if robot.has_self_collision(q))
    pose = robot.fk(q_bad)
    strict = robot.ik(pose, q_init=q_bad, rng=1, allow_random_restart=False, details=True)
    assert not strict.success and strict.tries == 1  # one try, from q_init, refused for the self-collision
    loose = robot.ik(pose, q_init=q_bad, rng=1, allow_random_restart=False, ignore_self_collisions=True, details=True)
    assert loose.success and loose.tries == 1 and np.allclose(robot.fk(loose.q), pose, atol=1e-3)
    q_ok = next(q for q in (robot.random_configuration(rng) for _ in range(2000)) if not robot.has_self_collision(q))
    many = robot.ik(robot.fk(q_ok), rng=2, details=True)
    assert many.success and many.tries >= 1


def test_base_placement_calls_name_how_to_place(robco):
    robot = robco.robot
    for call in (robot.set_base_placement, robot.move):
        with pytest.raises(InputError, match=r"to_pin_robot\(base_placement=T\)"):
            call(np.eye(4))
    T = np.eye(4)
    T[:3, 3] = (0.5, -0.2, 0.1)
    placed = robco.to_pin_robot(base_placement=T)  # what the message says to do
    q = robot.random_configuration(5)
    assert np.allclose(placed.fk(q), T @ robot.fk(q)) and np.allclose(placed.placement, T @ robot.placement)


def test_from_name_of_a_reference_set_says_how_to_load_it():
    from timor_core.errors import UnknownModuleError

    for name in ("IMPROV", "panda", "modrob-gen2"):
        with pytest.raises(UnknownModuleError, match=r"never downloads.*from_json_file\('<set folder>/modules.json'\)"):
            ModulesDB.from_name(name)
    with pytest.raises(UnknownModuleError, match="did you mean 'robco_like'") as typo:
        ModulesDB.from_name("robco_lik")
    assert "never downloads" not in str(typo.value)


REF_PRIMITIVES = sorted(ROOT.parent.glob("refvenv/lib/python3*/site-packages/timor_sample_robots/"
                                         "geometric_primitive_modules/modules.json"))  # fmt: skip
SHORT_EXAMPLE = ("base", "J2", "i_45", "J2", "J2", "eef")


def test_short_example_numbers_are_timor_s_set_not_the_reference_s():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "not timor-python's set of that name" in readme and "3.56 kg there" in readme
    if not REF_PRIMITIVES:
        pytest.skip("needs ../refvenv (timor-python 1.1.1) with its timor_sample_robots")
    ours = ModuleAssembly.from_serial_modules(ModulesDB.from_name("geometric_primitive_modules"), SHORT_EXAMPLE)
    theirs = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(REF_PRIMITIVES[0]), SHORT_EXAMPLE)
    assert ours.robot.mass == pytest.approx(12.625) and theirs.robot.mass == pytest.approx(3.5626, abs=1e-4)
    q0 = np.array([0.3, -0.5, 1.0])
    if REF_PYTHON.is_file() and (BENCH_REF / "timor_offline.py").is_file():
        script = (
            "import sys, json, numpy as np, timor_offline\n"
            "from timor.Module import ModulesDB, ModuleAssembly\n"
            "r = ModuleAssembly.from_serial_modules(ModulesDB.from_name('geometric_primitive_modules'), "
            f"{SHORT_EXAMPLE!r}).robot\n"
            "q = np.array([0.3, -0.5, 1.0])\n"
            "print(json.dumps([r.mass, r.fk(q).homogeneous.tolist(), r.static_torque(q).tolist()]))\n"
        )
        run = subprocess.run([str(REF_PYTHON), "-c", script], cwd=BENCH_REF, capture_output=True, text=True,
                             timeout=300, check=True)  # fmt: skip
        mass, fk, tau = json.loads(run.stdout.strip().splitlines()[-1])
        robot = theirs.robot
        assert robot.mass == pytest.approx(mass) and np.allclose(robot.fk(q0), fk)
        assert np.allclose(robot.static_torque(q0), tau, atol=1e-9)


def test_task_from_json_file_package_dir_and_from_id(tmp_path):
    embedded = Task.from_name("pick_and_place")
    folder = tmp_path / "tasks"
    (folder / "lab").mkdir(parents=True)
    data = embedded.to_json_data()
    data["header"]["ID"] = "lab/moved"
    (folder / "lab" / "moved.json").write_text(json.dumps(data), encoding="utf-8")
    by_id = Task.from_json_file(folder / "lab" / "moved.json")
    for task in (
        Task.from_json_file(folder / "lab" / "moved.json", folder),  # timor-python: from_json_file(path, package_dir)
        Task.from_json_file(folder / "lab" / "moved.json", package_dir=folder),
        Task.from_id("lab/moved", folder),
    ):
        assert task.id == "lab/moved" and task.base_dir == by_id.base_dir == folder.resolve()
        assert len(task.goals) == len(embedded.goals) and len(task.obstacles) == len(embedded.obstacles)
    with pytest.raises(InputError, match="not both"):
        Task.from_json_file(folder / "lab" / "moved.json", folder, task_dir=folder)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "| `Task.from_json_file(path, package_dir)`, `Task.from_id(id, package_dir)` | the same" in readme
    with pytest.raises(InputError, match="leaves the package folder"):
        Task.from_id("../tasks/lab/moved", folder / "lab")


def test_solution_from_json_file_finds_an_embedded_set(solved, tmp_path):
    from timor_core.task.solution import Solution

    path = solved.to_json_file(tmp_path / "solution.json")
    back = Solution.from_json_file(path, {solved.task.id: solved.task})  # timor-python: (path, tasks), set by name
    assert back.assembly.module_ids == solved.assembly.module_ids and np.array_equal(back.q, solved.q)
    assert back.assembly.db.name == "robco_like"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["moduleSet"] = "IMPROV"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match=r"'IMPROV' is not embedded.*from_json_file\(path, task, db\)") as info:
        Solution.from_json_file(path, solved.task)
    assert info.value.path == "$.moduleSet" and str(path) in str(info.value)
    assert Solution.from_json_file(path, solved.task, ModulesDB.from_name("robco_like")).valid == solved.valid


def test_assembly_database_keyword_and_dynamics_terms(robco):
    ids = list(robco.module_ids)
    chain = ModuleAssembly.from_serial_modules(robco.db, ids)
    built = ModuleAssembly(database=robco.db, assembly_modules=ids, connections=chain.connections,
                           base_connector=chain.base_connector)  # fmt: skip
    assert built == chain
    with pytest.raises(InputError, match="one module set"):
        ModuleAssembly(assembly_modules=ids)
    with pytest.raises(InputError, match="one module set"):
        ModuleAssembly(robco.db, ids, database=robco.db)
    robot = robco.robot
    q, dq, ddq = robot.random_configuration(8), np.linspace(-1.0, 1.0, robot.dof), np.linspace(2.0, -1.0, robot.dof)
    assert np.allclose(robot.id(q, dq, ddq, friction=True) - robot.id(q, dq, ddq), robot.friction(dq))
    assert np.allclose(robot.id(q, dq, ddq) - robot.id(q, dq, ddq, motor_inertia=False), robot.motor_inertias(ddq))
    assert np.any(robot.friction(dq) != 0) and np.any(robot.motor_inertias(ddq) != 0)
