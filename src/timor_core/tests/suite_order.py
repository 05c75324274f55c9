"""Which tests the suite marks slow or timing from outside their files, and which modules it hands out first (the
data conftest.py's collection hooks read; kept apart so conftest.py holds the fixtures and hooks)."""

from __future__ import annotations

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
        "test_normalising_any_text_refuses_by_input_error_or_gives_a_fixed_point",
        "test_the_hex_count_file_installs_normalised_with_the_original_beside_it",
    },
    "test_canopen_vendor_writes.py": {
        "test_every_encoding_of_a_unit_factor_of_one_is_accepted",
        "test_every_object_the_master_writes_is_checked_against_the_eds",
    },
    "test_cli.py": {
        "test_improv_db_validate_subprocess",
        "test_subprocess_errors_exit_2_no_traceback",
        "test_subprocess_success",
    },
    "test_cli_plugins.py": {"test_timor_core_never_imports_timor_ros"},
    "test_cli_robots.py": {"test_demo"},
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
    "test_shard_instructions.py": {"test_the_shard_loads_a_build_for_any_cpu"},
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
    "test_tolerance_residual.py": {
        "test_driving_the_residual_to_zero_reaches_a_valid_pose",
        "test_driving_the_residual_to_zero_reaches_a_valid_pose_off_nominal",
        "test_residual_zero_iff_valid_all_projections",
        "test_residual_zero_iff_valid_cartesian_rotation",
    },
    "test_tolerance_sampling.py": {
        "test_composed_validity_is_the_and_of_its_parts",
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
    "test_canopen_vendor_writes.py",
    "test_urdf_import_robots.py",
    "test_discover.py",
    "test_canopen_vendor.py",
    "test_collision_contact.py",
    "test_ref_robot_setup.py",
    "test_paper_exp2.py",
    "test_cost_order.py",
    "test_tolerance.py",
    "test_tolerance_sampling.py",
    "test_tolerance_residual.py",
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
    "test_family_proof_starts.py",
    "test_family_proof_witnesses.py",
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
    "test_reach_proof_boxes.py",
    "test_viz_plots.py",
    "test_srdf_agreement.py",
    "test_ref_task_solutions.py",
    "test_ref_serializing.py",
)
