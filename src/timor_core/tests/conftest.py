"""Shared fixtures: the embedded module sets and, when present, the real CoBRA data in ../shared."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

# hypothesis runs its entry-point plugins when imported: here only trio's (a dependency of selenium; no test of the
# suite runs trio), which imported trio into every pytest process, ~0.14 CPU-s each (5 runs of a collection each way,
# 2026-11-29, load ~17: 0.66-0.81 against 0.52-0.61 CPU-s)
os.environ.setdefault("HYPOTHESIS_NO_PLUGINS", "1")

from hypothesis import settings

# every process of the suite (Dask workers, CLI and node subprocesses too) runs the compiled kernels (the ahead-of-time
# builds `make test` makes first, else numba's), so results compared across processes are the same to the last digit;
# the interpreted ones are tested in-process where named (use_compiled(False), timor_core.common.compiled: both agree
# to rounding). Compiled rather than interpreted since 2026-11-29: what a user's search runs after its first 0.5 s of
# kernels, and the core suite took 3:02 instead of 3:14 (313 instead of 332 CPU-s, quiet machine, -n 2)
os.environ["TIMOR_COMPILED"] = "1"

from timor_core import ModulesDB
from timor_core.common.compiled import use_compiled
from timor_core.common.interrupts import restore_interrupts
from timor_core.export.formats.urdfdom import check_urdf, unchecked_urdfs

# started as a background job (`make test &`), SIGINT and SIGQUIT would be ignored here and in every process the tests
# start: `timor db show`, the configurator and the other processes the tests stop with SIGINT would wait out their
# timeouts (as the ROS suite's launches did, src/timor_ros/test/conftest.py)
restore_interrupts()

REPO = Path(__file__).resolve().parents[3]
SHARED = REPO.parent / "shared"
IMPROV_FILE = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
EMBEDDED = REPO / "src" / "timor_core" / "timor_core" / "data"


# CI runs derandomized (the same examples every run, so a red CI always reproduces); developers get fresh ones
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("TIMOR_HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["TIMOR_HYPOTHESIS_PROFILE"])


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slower tests (deselect with -m 'not slow')")
    config.addinivalue_line("markers", "timing: asserts a wall-clock budget (make test runs these alone, at the end)")
    config.addinivalue_line("markers", "invalid_urdf: the test writes URDF files urdfdom must refuse (not checked)")


#: tests marked slow here rather than in their files (make test-fast leaves them out; make test runs them), so that
#: make test-fast stays an inner loop: chosen from `--durations` of `-n 2` runs on a shared 2-core machine
#: (2026-11-28): more than 8 s at load 10, then 0.9 s (or 2 s over its parameters) at load 3.4, then 2.4 s at load 5;
#: 2026-11-29 by CPU time (per test, its child processes included: the machine was at load ~24): the seven left in
#: make test-fast that took 1.1-4.3 CPU-s and are not a module fixture's first user, each of whose modules keeps
#: fast tests (and back in make test-fast: two tests of test_hostile_round3_search.py that now run the CLI
#: in-process, 0.2-0.3 CPU-s over their parameters).
#: 2026-11-29 07:20 by CPU time again (load 3-5; make test-fast at -n 2 took 117.6 CPU-s, 59 s of 2 cores before
#: any wait): the tests of 0.7-1.9 CPU-s left in it (over their parameters), except test_architecture's and
#: test_code_shape's (the inner loop's rules) and the first users of a module fixture; each module keeps fast tests.
#: A module's test name covers every parametrization of it; "*": every test of the module (those sharing an
#: expensive fixture such as a local Dask cluster). A name its module no longer has fails the collection.
SLOW = {
    "test_bringup_hostile.py": {
        "test_any_parameter_text_reaches_the_expanded_urdf_unchanged",
        "test_eds_file_names_with_quotes_and_newlines_and_shared_base_names_stay_apart",
    },
    "test_bringup_templates.py": {"test_every_launch_file_type_checks"},
    "test_canopen_vendor.py": {
        "test_a_velocity_mode_gives_velocity_mode_the_target_velocity_pdo_and_velocity_commands",
        "test_discovery_of_the_three_vendor_drives_on_a_simulated_bus",
        "test_each_vendor_file_alone_on_a_robco_arm",
        "test_three_vendor_drives_build_and_give_robotsystem_what_it_reads",
        "test_velocity_scale_follows_the_eds_units_and_the_profile_overrides",
        "test_without_lely_core_libraries_the_package_builds_and_says_the_bus_cannot_start",
    },
    "test_canopen_vendor_files.py": {
        "test_each_vendor_file_is_read_as_lely_reads_it",
        "test_every_encoding_of_a_unit_factor_of_one_is_accepted",
        "test_every_object_the_master_writes_is_checked_against_the_eds",
        "test_normalising_any_text_refuses_by_input_error_or_gives_a_fixed_point",
        "test_the_hex_count_file_installs_normalised_with_the_original_beside_it",
    },
    "test_cli.py": {
        "test_demo",
        "test_improv_db_validate_subprocess",
        "test_subprocess_errors_exit_2_no_traceback",
        "test_subprocess_success",
    },
    "test_cli_plugins.py": {"test_timor_core_never_imports_timor_ros"},
    "test_cluster.py": {"*"},
    "test_cold_paths.py": {"test_is_rigid_says_what_allclose_said"},
    "test_collision_contact.py": {"test_verdicts_near_contact_agree_with_the_signed_distance"},
    "test_configurator_browser.py": {"test_build_check_see_and_download"},
    "test_configurator_state.py": {"test_cli_port_in_use_is_one_line_and_exit_2"},
    "test_cost_order.py": {
        "test_a_search_over_10_to_the_8_assemblies_runs_in_bounded_memory",
        "test_exp2_with_a_limit_bounds_work_memory_and_workers",
        "test_taking_a_few_of_a_huge_space_is_quick_and_small",
        "test_the_walk_keeps_one_frontier_entry_per_chain_popped",
    },
    "test_dask_search.py": {"*"},
    "test_dask_search_shards.py": {"*"},
    "test_discover.py": {
        "test_a_drive_missing_between_others_or_from_the_chain_is_named",
        "test_a_drive_with_only_the_mandatory_identity_entries_is_found",
        "test_an_empty_bus_is_an_error",
        "test_an_unknown_drive_is_named_by_node_id_and_product_code",
        "test_cli_discover_prints_the_assembly_and_writes_its_bringup",
        "test_discover_from_a_shell_against_a_simulator_in_another_process",
        "test_the_robot_on_the_bus_is_found_in_node_id_order",
        "test_two_drives_at_one_node_id_are_refused_naming_it",
    },
    "test_dynamics_and_ik_options.py": {"test_scipy_method_solves_the_same_goals"},
    "test_examples.py": {"test_search", "test_task_and_solution", "test_visualize"},
    "test_family_proof.py": {
        "test_no_certificate_of_a_merged_family_refuses_a_chain_that_reaches_the_goal",
        "test_no_certificate_refuses_a_chain_that_reaches_the_goal",
    },
    "test_ga.py": {"test_cli_subprocess"},
    "test_hardware_guide.py": {"test_guide_command_runs", "test_the_guides_simulator_and_discover_run_in_two_shells"},
    "test_hostile_bounds.py": {"test_the_largest_accepted_request_is_described_in_bounded_time"},
    "test_hostile_cli.py": {
        "test_negative_joint_values_and_both_robot_forms",
        "test_prefix_injection_is_refused_by_every_exporter",
        "test_unbounded_or_deep_inputs_are_refused",
    },
    "test_hostile_loaders.py": {"test_fuzz_any_json_value", "test_fuzz_module_sets"},
    "test_hostile_outputs.py": {"test_urdfs_of_many_assemblies_pass_check_urdf"},
    "test_hostile_round2.py": {
        "test_anytime_planners_solve_a_free_motion_in_one_second",
        "test_fuzz_launch_arguments",
        "test_fuzz_planner_settings",
    },
    "test_hostile_round3.py": {
        "test_a_bad_environment_variable_is_one_error_line_naming_it",
        "test_a_vrml_use_bomb_is_refused_before_it_is_walked",
        "test_fuzz_yaml_loader",
    },
    "test_hostile_round3_search.py": {
        "test_a_port_that_is_not_a_scheduler_fails_within_the_timeout",
        "test_cli_scheduler_that_never_speaks_or_speaks_junk_is_one_error_line",
        "test_cost_weights_out_of_range_are_refused_naming_the_option",
        "test_fuzz_checkpoint_files",
        "test_scheduler_credentials_are_refused_and_never_printed",
    },
    "test_hostile_urdf_elements.py": {
        "test_a_link_up_to_the_limit_imports_and_the_limit_in_force_applies",
        "test_a_long_token_costs_a_few_passes_when_the_limit_is_raised",
        "test_one_huge_element_is_refused_early_in_bounded_memory",
    },
    "test_hostile_urdf_import.py": {
        "test_a_urdf_of_200000_links_is_refused_early_in_bounded_memory",
        "test_fuzz_urdf_import",
        "test_two_imports_into_one_folder_keep_their_own_meshes",
    },
    "test_ik_kernel.py": {
        "test_a_search_with_compiled_kernels_finds_what_the_interpreted_one_finds",
        "test_the_chain_kinematics_are_pinocchios",
        "test_the_residual_is_the_interpreted_one",
        "test_without_numba_the_interpreted_descent_goes_on",
    },
    "test_ik_tries.py": {
        "test_an_arm_with_joints_after_the_tcp_runs_compiled",
        "test_the_reach_bound_refuses_no_pose_an_arm_reaches",
    },
    "test_iterator.py": {"test_exp2_memory_flat"},
    "test_json_text.py": {"test_the_text_parses_to_what_json_dumps_gives"},
    "test_lazy_filters.py": {"test_the_chain_gives_what_building_every_assembly_gives"},
    "test_lessons.py": {"test_two_workers_sharing_certificates_find_the_one_worker_optimum"},
    "test_local_shards.py": {
        "test_a_failing_or_dying_shard_ends_the_search_with_a_shard_error",
        "test_an_evaluation_budget_keeps_the_one_stream",
        "test_shards_find_the_one_process_answer",
    },
    "test_migration.py": {"test_tasks_solutions_and_search"},
    "test_move_group_process.py": {"test_a_move_group_that_does_not_come_up_brings_the_last_one_back"},
    "test_paper_exp2.py": {"test_ga_verdicts_do_not_depend_on_the_number_of_workers"},
    "test_part_text.py": {"test_any_part_is_its_json_dumps", "test_json_lines_write_as_the_records_would"},
    "test_planning.py": {"test_plan_avoids_self_collision_on_a_real_robot"},
    "test_planning_ompl.py": {
        "test_an_enclosed_goal_gives_none_within_the_budget",
        "test_every_ompl_planner_goes_around_the_wall",
        "test_joint_path_with_each_planner_then_shortcut",
        "test_plan_on_a_real_robot_with_ompl",
    },
    "test_reach_proof.py": {"test_a_reached_pose_is_never_refused"},
    "test_ref_ga.py": {"test_ga_setup_and_callbacks", "test_offspring_is_valid"},
    "test_ref_obstacle_imports.py": {"test_imports"},
    "test_ref_robot_setup.py": {"test_robot_ik"},
    "test_ref_serializing.py": {"test_assembly_to_urdf", "test_load_then_dump_task"},
    "test_ref_task_solutions.py": {"test_goals"},
    "test_ref_tolerance_cases.py": {"test_visualization"},
    "test_search.py": {"test_one_and_two_workers_give_identical_results"},
    "test_search_early_bound.py": {"test_searches_are_the_same_with_and_without_the_early_bound"},
    "test_solution.py": {
        "test_cli_solution_from_a_given_start",
        "test_point_to_point_from_a_given_start",
        "test_real_tasks_solved_with_improv",
    },
    "test_space_reach.py": {"test_the_bounds_from_the_modules_give_the_built_robots_verdict"},
    "test_srdf_agreement.py": {
        "test_agreement_holds_for_any_seed",
        "test_moveit_and_timor_find_the_same_self_collisions",
    },
    "test_sweep_proof.py": {"test_the_arms_that_reach_g3_only_through_box1_are_proven_so"},
    "test_task_assets.py": {"test_every_sample_task_round_trips_to_a_new_folder"},
    "test_task_cli.py": {"test_user_study_feedback_improv_subprocess"},
    "test_tolerance.py": {
        "test_composed_validity_is_the_and_of_its_parts",
        "test_driving_the_residual_to_zero_reaches_a_valid_pose",
        "test_driving_the_residual_to_zero_reaches_a_valid_pose_off_nominal",
        "test_residual_zero_iff_valid_all_projections",
        "test_residual_zero_iff_valid_cartesian_rotation",
        "test_sample_is_valid_composed",
        "test_sample_is_valid_single_projection",
        "test_zero_deviation_lies_in_every_interval_containing_zero",
    },
    "test_urdf_import.py": {"test_a_task_solved_with_an_imported_robot"},
    "test_urdf_import_errors.py": {"test_a_cycle_never_hangs"},
    "test_urdf_import_massless.py": {"test_so101_gripper_frame_link"},
    "test_urdf_import_robots.py": {"test_arm_equals_pinocchios_loader", "test_import_count"},
    "test_urdf_import_uses.py": {
        "test_every_export_of_a_branched_imported_robot",
        "test_ik_with_continuous_joints_has_no_overflow",
    },
    "test_urdf_writer.py": {"test_trees_follow_the_kinematic_tree_and_pass_check_urdf"},
    "test_viz_plots.py": {"test_cli_plot", "test_convergence_funnel_compare", "test_trajectory_with_limits"},
    "test_viz_render.py": {
        "test_cli_video_random_motion",
        "test_contact_sheet_not_blank",
        "test_mp4_has_moving_frames",
        "test_outputs_of_an_unknown_format_are_refused",
        "test_solution_of_the_user_study_plans_and_films",
    },
    "test_viz_viewer.py": {"test_ctrl_c_on_db_show_exits_cleanly", "test_page_renders_in_headless_chromium"},
    "test_vrml_numbers.py": {"test_the_numbers_read_are_the_numbers_written"},
}


#: tests that assert a wall-clock budget of the product (a search's time limit, a connect timeout): a budget is a
#: promise about one command on the machine, so `make test` runs them after the parallel run, in one process, with
#: nothing of the suite beside them (under xdist, or at load 14, the budgets were missed by the machine, not the code)
TIMING = {
    "test_dask_budget.py": {"test_a_time_budget_holds_on_dask_with_busy_workers"},
    "test_hostile_round3_search.py": {
        "test_a_time_budget_holds_with_any_workers_and_population",
        "test_cli_scheduler_that_never_speaks_or_speaks_junk_is_one_error_line",
    },
    "test_local_shards.py": {"test_the_time_limit_stops_every_shard"},
}


#: the modules whose tests took longest, handed out first: pytest-xdist's --dist loadgroup sends the groups
#: (xdist_group) first, the largest first, then every other test one by one in collection order, which put these
#: (package builds with CMake and lely's dcfgen, the solve-verified search) among the first third of the alphabet and
#: chromium, film and fuzz tests last; with them first, the short tests fill both workers' ends. Chosen from a `-n 2`
#: run's wall time per module (2026-11-29, load ~15; tests/test_canopen_vendor_files.py 254 s over 38 tests,
#: test_canopen_vendor.py 160 s over 13, test_bringup_templates.py 41 s, test_bringup.py 37 s, test_bringup_hostile.py
#: 25 s) and the slow tests measured before (test_collision_contact.py's solve verification, 25 CPU-s); then
#: (2026-11-29 07:20) from the lead's quiet run (06:46, load ~2: the tests of >= 1 s) and a per-test CPU profile
#: (06:53, load 3.6-5.2): the modules holding one test of 10-30 s (the configurator in chromium 28 s, test_robot_ik
#: 10 s, the GA of test_paper_exp2 10 s: one of them late keeps one worker busy while the other has nothing left)
#: and those of 10-36 CPU-s or ~20 s of waiting (test_discover's CAN scans), longest first; then the films of
#: test_viz_render.py (its 2-6 s film test and the 11 s chromium test of test_viz_viewer ended a worker's run at 06:53).
#: Then (2026-11-29 15:12, -n 2 at load 7-9, a per-test CPU profile) the modules whose tests of 2-6 CPU-s started in
#: the last quarter of a worker's run: the any-order sweep test (5.9 CPU-s) began at 94 % of it, test_migration's
#: search (2.7) at 87 %, test_hostile_bounds' 50-joint description (2.6) and test_family_proof's 1,000-arm witness
#: checks (1.1-2.5 each, 15.6 over the module) at 73-78 %: a long test begun late keeps one worker busy at the end.
#: Then (2026-11-29 19:00-19:15, two -n 2 runs at load 4-5 with a per-test timeline) the modules of the tests of
#: 2-6 s that started in the last 10 % of a worker's run in either (the workers ended 3.2 and 4.9 s apart, each
#: ending on such a test: test_so101_gripper_frame_link 5.6 s at 97 %, test_imports 3.5-4.1 s at 92-95 %, the
#: viewer's chromium tests, the branched robot's exports).
#: A module's own order is kept (its module fixtures are set up once per worker, as before).
LONGEST_FIRST = (
    "test_configurator_browser.py",
    "test_canopen_vendor_files.py",
    "test_urdf_import_robots.py",
    "test_discover.py",
    "test_canopen_vendor.py",
    "test_collision_contact.py",
    "test_ref_robot_setup.py",
    "test_paper_exp2.py",
    "test_cost_order.py",
    "test_tolerance.py",
    "test_hostile_cli.py",
    "test_examples.py",
    "test_planning_ompl.py",
    "test_bringup_templates.py",
    "test_bringup.py",
    "test_bringup_hostile.py",
    "test_urdf_writer.py",
    "test_local_shards.py",
    "test_viz_render.py",
    "test_sweep_proof.py",
    "test_family_proof.py",
    "test_migration.py",
    "test_hostile_bounds.py",
    "test_urdf_import_massless.py",
    "test_ref_obstacle_imports.py",
    "test_ref_assembly_filters.py",
    "test_part_text.py",
    "test_ref_tolerance_cases.py",
    "test_urdf_import_uses.py",
    "test_viz_viewer.py",
    "test_reach_proof.py",
    "test_viz_plots.py",
    "test_srdf_agreement.py",
    "test_ref_task_solutions.py",
    "test_ref_serializing.py",
)


def pytest_ignore_collect(collection_path, config):
    """``-m timing`` (make test's run of the timing tests) imports only the modules TIMING names: collecting the
    whole suite to select eleven tests cost that run ~10 s of CPU."""
    if config.getoption("markexpr", "") == "timing" and collection_path.name.startswith("test_"):
        return collection_path.suffix == ".py" and collection_path.name not in TIMING or None
    return None


def _keep_xdist_groups(config, items) -> None:
    """Keep ``--dist loadgroup``'s groups: pytest-xdist 3.8 appends ``@group`` to ``item._nodeid``, which pytest 9.2
    no longer reads (``Node.nodeid`` is ``str(item._id)``), so every xdist_group of the suite was ignored (the
    udp_multicast tests ran side by side, test_packaging's venv was built by each worker). Done here where xdist's
    rewrite cannot take; nothing without --dist loadgroup or on an older pytest (where xdist's rewrite works)."""
    if not getattr(config.option, "loadgroup", False):  # set by xdist for --dist loadgroup only
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2, whose nodes carry a structured id
    except ImportError:
        return
    for item in items:
        names = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)


@pytest.hookimpl(tryfirst=True)  # before -m "not slow" deselects
def pytest_collection_modifyitems(config, items):
    """Mark the tests listed in SLOW as slow and those in TIMING as timing; a listed name that its (collected)
    module lacks is an error."""
    modules = {}
    for item in items:
        modules[item.path.name] = item.module
        if {item.originalname, "*"} & SLOW.get(item.path.name, set()):
            item.add_marker(pytest.mark.slow)
        if item.originalname in TIMING.get(item.path.name, set()):
            item.add_marker(pytest.mark.timing)
    listed = {m: SLOW.get(m, set()) | TIMING.get(m, set()) for m in modules}
    stale = {f"{m}::{n}" for m, mod in modules.items() for n in listed[m] - {"*"} if not hasattr(mod, n)}
    if stale:
        raise pytest.UsageError(f"conftest.SLOW or TIMING names tests that are gone: {sorted(stale)}")
    _keep_xdist_groups(config, items)
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: the rest keep collection order


# -- every URDF file the suite writes must pass urdfdom's check_urdf (robot_state_publisher's and MoveIt's parser)
_CHECKED_URDFS: set[Path] = set()


def check_urdf_file(path: Path) -> None:
    """Fail the test unless urdfdom's ``check_urdf`` parses the file."""
    _CHECKED_URDFS.add(Path(path).resolve())
    ok, output = check_urdf(path)
    if not ok:
        pytest.fail(f"check_urdf refuses {path}:\n{output}", pytrace=False)


def _check_urdfs_under(folder: Path) -> None:
    for path in unchecked_urdfs(folder, _CHECKED_URDFS):
        check_urdf_file(path)


@pytest.fixture(autouse=True)
def _default_kernels():
    """A test that picks the compiled or the interpreted kernels (``use_compiled``) leaves the next test the suite's
    default (``TIMOR_COMPILED=0`` above): a choice left behind made a later in-process search differ in the last bit
    from the same search in other processes (test_dask_search_shards after test_family_proof in one worker)."""
    yield
    use_compiled(None)


@pytest.fixture(autouse=True)
def _written_urdfs_pass_check_urdf(request):
    """After each test, run check_urdf on every ``*.urdf`` it wrote into its tmp_path."""
    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if tmp is not None and not request.node.get_closest_marker("invalid_urdf"):
        _check_urdfs_under(tmp)


@pytest.fixture(scope="session", autouse=True)
def _session_urdfs_pass_check_urdf(tmp_path_factory):
    """At the end of the session, check_urdf on the URDFs written into shared temporary folders too."""
    yield
    base = tmp_path_factory.getbasetemp()
    for folder in sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("test_")):
        _check_urdfs_under(folder)


@pytest.fixture(scope="session")
def primitives() -> ModulesDB:
    return ModulesDB.from_name("geometric_primitive_modules")


@pytest.fixture(scope="session")
def robco() -> ModulesDB:
    return ModulesDB.from_name("robco_like")


@pytest.fixture(scope="session")
def improv() -> ModulesDB:
    if not IMPROV_FILE.is_file():
        pytest.skip(f"real IMPROV data not available (expected {IMPROV_FILE}); it lives in ../shared beside the repo")
    return ModulesDB.from_json_file(IMPROV_FILE)


def primitives_json() -> dict:
    """A fresh deep copy of the embedded geometric primitive set's JSON, to mutate in tests."""
    return copy.deepcopy(json.loads((EMBEDDED / "geometric_primitive_modules" / "modules.json").read_text()))


def write_db(tmp_path: Path, data: dict, name: str = "modules.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=1))
    return path


def random_placement(rng, spread: float):
    """A random base placement for property tests: any rotation, the origin within ``spread`` of the world's."""
    import numpy as np
    from scipy.spatial.transform import Rotation

    m = np.eye(4)
    m[:3, :3] = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
    m[:3, 3] = rng.uniform(-spread, spread, 3)
    return m


def anywhere_configuration(robot, rng):
    """A configuration anywhere in ±2π (beyond the limits too: reach bounds ignore them), prismatic joints within
    their travel."""
    import numpy as np

    q = rng.uniform(-2 * np.pi, 2 * np.pi, robot.dof)
    if robot.dof:
        lo, hi = robot.model.lowerPositionLimit, robot.model.upperPositionLimit
        prismatic = [
            robot.model.joints[j].idx_q
            for j in range(1, robot.model.njoints)
            if "P" in robot.model.joints[j].shortname()
        ]
        q[prismatic] = rng.uniform(lo[prismatic], hi[prismatic])
    return q


def reach_test_spaces() -> tuple[dict, dict]:
    """(module sets, small serial spaces) of both embedded sets, for the reach-bound property tests: 1-5 DOF,
    at most two links between joints and one before the first or after the last joint."""
    from timor_core.search import SerialSpace, SpaceOptions

    dbs = {name: ModulesDB.from_name(name) for name in ("robco_like", "geometric_primitive_modules")}
    options = SpaceOptions(
        dof_min=1,
        dof_max=5,
        first_is_joint=False,
        max_links_between_joints=2,
        max_links_before_first_joint=1,
        max_links_after_last_joint=1,
    )
    return dbs, {name: SerialSpace(db, options) for name, db in dbs.items()}


def same_best(a, b) -> None:
    """Two search results found the same best assembly, cost and position (the Dask tests' equality)."""
    assert a.found and b.found
    assert (a.best_ids, a.best_cost, a.best_seq) == (b.best_ids, b.best_cost, b.best_seq)


def start_forked(evaluator):
    """Start a local Dask cluster (``DaskEvaluator(n_workers=...)``) whose workers are forked from a forkserver that
    has distributed, timor's worker code and the compiled kernels loaded once (``forked_workers(WORKER_PRELOAD)``),
    rather than spawned (each a fresh interpreter importing them): for the module-scoped clusters the Dask tests
    share, which only need *a* cluster. Measured 2026-11-29: a 2-worker cluster's start 2.1 -> 0.9 CPU-s with its
    workers (after the first) with distributed preloaded; timor's worker code and kernels preloaded too saved a
    further ~0.8 CPU-s a worker (each loaded them on its first task). The tests that check a user's cluster
    (its start, the processes it leaves: test_a_local_cluster_leaves_no_process_behind, the CLI's ``--scheduler
    local``) start theirs as a user's starts, spawned, and so does a nanny replacing a killed worker. The forkserver
    stays a child of this process until it exits; it is set up with the module's fixture, before any test takes
    its list of child processes (``before``), so no test counts it as left behind."""
    from timor_core.search.dask_cluster.dask_connect import forked_workers
    from timor_core.search.exhaustive_search.shards import WORKER_PRELOAD

    with forked_workers(WORKER_PRELOAD):
        return evaluator.start()
