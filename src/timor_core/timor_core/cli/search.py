"""Subcommands of ``timor`` for configuration search: ``search``, ``result show`` and the paper's experiments
``paper exp1`` / ``paper exp2`` (registered by :mod:`timor_core.cli.app`)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from timor_core.cli.args import cost as cost_type
from timor_core.cli.args import json_text, limited, limited_float
from timor_core.cli.args import load_db as _load_db
from timor_core.cli.args import output_folder as _output_folder
from timor_core.cli.args import scheduler_address as _scheduler_address
from timor_core.cli.args import seed as _seed
from timor_core.cli.args import workers as _workers
from timor_core.errors import InputError
from timor_core.limits import cap_workers

if TYPE_CHECKING:
    from timor_core.model.db import ModulesDB
    from timor_core.search import Optimizer

__all__ = ["register"]


def _cmd_paper_exp1(args: argparse.Namespace) -> int:
    from timor_core.paper.experiments import exp1

    result = exp1(_load_db(args.db), limit=args.limit)
    print(json_text(result.to_json()) if args.json else result.summary())
    return 0


def _cmd_paper_exp2(args: argparse.Namespace) -> int:
    from timor_core.paper.experiments import exp2
    from timor_core.task.feedback import load_task

    db = _load_db(args.db)
    task = load_task(args.task, False)
    algorithms = ("constrained", "ga") if args.algorithm == "both" else (args.algorithm,)
    result = exp2(
        db,
        task,
        algorithms=algorithms,
        workers=args.workers,
        generations=args.generations,
        population=args.population,
        trials=args.trials,
        seed=args.seed,
        order=args.order,
        limit=args.limit,
        progress=not args.no_progress and not args.json,
    )
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for run in result.runs:
            if run.result is not None:  # exp2 keeps the search result of every run
                run.result.to_json_file(out / f"{run.algorithm}.json")
    print(json_text(result.to_json()) if args.json else result.summary())
    return 0 if all(run.ok for run in result.runs) else 1


def _cmd_search(args: argparse.Namespace) -> int:
    from timor_core.search import Budget
    from timor_core.search.dask_cluster.dask_connect import SchedulerError
    from timor_core.task.feedback import load_task

    db = _load_db(args.db)
    task = load_task(args.task, False)
    if not task.goals:
        raise InputError(f"the task {task.id!r} has no goals: nothing to search for", value=args.task)
    if not db.bases or not db.end_effectors:
        raise InputError(f"the module set {db.name!r} needs a base and an end effector module", value=args.db)
    if args.algorithm == "ga":
        optimizer = _genetic_search(args, db)
    elif args.algorithm == "random":
        from timor_core.search import FilterConfig, RandomSearch

        optimizer = RandomSearch(
            _space(args, db),
            args.cost,
            FilterConfig(seed=args.seed),
            seed=args.seed,
            workers=args.workers,
            progress=not args.no_progress,
        )
    else:
        optimizer = _exhaustive_search(args, db)
    try:
        result = optimizer.optimize(task, db, Budget(args.budget_evals, args.budget_seconds))
    except SchedulerError as exc:
        exc.path = "--scheduler"  # the option the address came from
        raise
    if args.output:
        result.to_json_file(args.output)
    print(result.summary())
    return 0


def _genetic_search(args: argparse.Namespace, db: ModulesDB) -> Optimizer:
    """The GA of ``timor search --algorithm ga`` (its space is set by --max-dof/--min-dof, not --space)."""
    from timor_core.search import FilterConfig, GeneticSearch

    if args.space != "auto":
        raise InputError("--space shapes the exhaustive and random search; the GA's is set by --max-dof/--min-dof")
    if args.min_dof > args.max_dof:
        raise InputError(f"--min-dof ({args.min_dof}) must not exceed --max-dof ({args.max_dof})", value=args.min_dof)
    return GeneticSearch(
        db,
        cost=args.cost,
        max_dof=args.max_dof,
        min_dof=args.min_dof,
        generations=args.generations,
        population=args.population,
        seed=args.seed,
        trials=args.trials,
        early_stop=args.early_stop,
        filters=FilterConfig(seed=args.seed),
        workers=args.workers,
        progress=not args.no_progress,
    )


def _space(args: argparse.Namespace, db: ModulesDB):
    """The ``--space`` of the exhaustive and random search over ``db``; one that holds no assembly is refused (the
    search reported 'no assembly of the space reaches farther than -inf m')."""
    from timor_core.search import load_space

    space = load_space(args.space, db)
    if space.count == 0:
        raise InputError(
            f"the search space holds no assembly of module set {db.name!r}; give one that does as --space FILE, "
            'e.g. {"dof_max": 6, "max_modules": 8}',
            path="--space",
            value=args.space,
        )
    return space


def _exhaustive_search(args: argparse.Namespace, db: ModulesDB) -> Optimizer:
    """The exhaustive search of ``timor search``: in process, or on a Dask cluster (--scheduler, --resume)."""
    from timor_core.search import ExhaustiveSearch, FilterConfig

    evaluator = None
    if args.scheduler or args.resume:
        from timor_core.search import DaskEvaluator

        checkpoint = args.checkpoint or (f"{args.output}.checkpoint.json" if args.output else None)
        evaluator = DaskEvaluator(
            None if args.scheduler in (None, "local") else args.scheduler,
            n_workers=cap_workers(args.workers or 2),
            checkpoint=checkpoint,
            resume=args.resume,
        )
    return ExhaustiveSearch(
        _space(args, db),
        args.cost,
        FilterConfig(seed=args.seed),
        workers=args.workers,
        progress=not args.no_progress,
        order=args.order,
        evaluator=evaluator,
    )


def _cmd_result_show(args: argparse.Namespace) -> int:
    from timor_core.search import SearchResult
    from timor_core.task.feedback import goal_feedback_line

    result = SearchResult.from_json_file(args.file)
    if args.json:
        print(json_text(result.to_json_data(), indent=1))
        return 0
    print(result.summary())
    for entry in result.goal_report():  # every goal of the task, in task order
        print(goal_feedback_line(entry))
    if result.found and result.task_goals is None:
        print("(pose goals only: this result was written before results kept the task's goals)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``paper``, ``search`` and ``result`` to the ``timor`` parser."""
    _add_paper_commands(sub)
    _add_search_command(sub)
    res = sub.add_parser("result", help="inspect search results")
    ress = res.add_subparsers(dest="result_command", required=True)
    show = ress.add_parser("show", help="best assembly, cost, per-goal status and funnel of a result.json")
    show.add_argument("file", help="result .json file")
    show.add_argument("--json", action="store_true", help="print the result JSON")
    show.set_defaults(func=_cmd_result_show)


def _add_paper_commands(sub: argparse._SubParsersAction) -> None:
    """``timor paper exp1`` and ``timor paper exp2``."""
    paper = sub.add_parser("paper", help="experiments of the Timor paper")
    papers = paper.add_subparsers(dest="paper_command", required=True)
    exp1 = papers.add_parser("exp1", help="URDFs of all 32,768 robots of the Science Robotics 2019 IMPROV space, timed")
    exp1.add_argument("--db", required=True, help="the IMPROV modules.json (or its folder)")
    exp1.add_argument("--json", action="store_true", help='print {"count", "seconds", "ms_per_assembly"}')
    exp1.add_argument(
        "--limit", type=limited("max_search_evals"), help="stop after the first N assemblies (quick runs)"
    )
    exp1.set_defaults(func=_cmd_paper_exp1)
    exp2 = papers.add_parser(
        "exp2", help="lightest RobCo-like robot for the user-study task: constrained search and GA, timed and verified"
    )
    exp2.add_argument("--task", required=True, help="the user-study task (user_study.json)")
    exp2.add_argument("--db", default="robco_like", help="module set (default: the embedded robco_like)")
    exp2.add_argument("--algorithm", choices=("both", "constrained", "ga"), default="both")
    exp2.add_argument("--workers", type=_workers, help="processes (default: all cores)")
    exp2.add_argument(
        "--generations", type=limited("max_generations"), default=500, help="GA generations (default 500)"
    )
    exp2.add_argument("--population", type=limited("max_population", 2), default=20, help="GA population (default 20)")
    exp2.add_argument("--trials", type=limited("max_trials"), default=1, help="GA trials (default 1)")
    exp2.add_argument("--seed", type=_seed, default=0, help="seed of the GA and the IK (default 0)")
    exp2.add_argument(
        "--order",
        choices=("cost", "space"),
        default="cost",
        help="constrained search order: lightest first (default; stops when nothing lighter is left) or the"
        " paper's space order",
    )
    exp2.add_argument(
        "--limit", type=limited("max_search_evals"), help="constrained search: only the first N assemblies"
    )
    exp2.add_argument("--no-progress", action="store_true", help="no progress bar")
    exp2.add_argument("--json", action="store_true", help="print the figures as JSON")
    exp2.add_argument(
        "-o", "--output", type=_output_folder, help="folder for the full search results (constrained.json, ga.json)"
    )
    exp2.set_defaults(func=_cmd_paper_exp2)


def _add_search_command(sub: argparse._SubParsersAction) -> None:
    """``timor search``: the space, the algorithm and its budget, the GA's settings, Dask."""
    search = sub.add_parser("search", help="search the assembly that best serves a task (exhaustive, random, GA)")
    search.add_argument("task", help="task .json file")
    search.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    search.add_argument("--algorithm", choices=("exhaustive", "ga", "random"), default="exhaustive")
    search.add_argument(
        "--space",
        default="auto",
        help="search space of the exhaustive and random search: exp2, science2019, auto (by the module set), or a "
        'JSON file of SpaceOptions such as {"dof_max": 3, "modules": ["J", "L_100"], "max_modules": 6}',
    )
    search.add_argument("--workers", type=_workers, help="processes (default: all cores)")
    search.add_argument("--budget-evals", type=limited("max_search_evals"), help="stop after N evaluated assemblies")
    search.add_argument("--budget-seconds", type=limited_float("max_search_seconds"), help="stop after S seconds")
    search.add_argument("--seed", type=_seed, default=0, help="seed of the search and of the IK (default 0)")
    search.add_argument(
        "--generations", type=limited("max_generations"), default=50, help="GA generations (default 50)"
    )
    search.add_argument(
        "--population", type=limited("max_population", 2), default=20, help="GA population (default 20)"
    )
    search.add_argument("--trials", type=limited("max_trials"), default=1, help="independent GA runs (default 1)")
    search.add_argument(
        "--early-stop", type=limited("max_generations"), help="GA: stop after N generations without change"
    )
    search.add_argument("--max-dof", type=limited("max_dof"), default=6, help="GA: most degrees of freedom (default 6)")
    search.add_argument(
        "--min-dof", type=limited("max_dof"), default=1, help="GA: fewest degrees of freedom (default 1)"
    )
    search.add_argument(
        "--order",
        choices=("space", "cost"),
        default="space",
        help="exhaustive search: the space's order (default) or cheapest first, streamed, stopping when nothing"
        " cheaper than the best is left",
    )
    search.add_argument(
        "--cost", default="mass", type=cost_type, help="cost descriptor of assembly terms (mass, numJ, moduleCost)"
    )
    search.add_argument("--no-progress", action="store_true", help="no progress bar")
    search.add_argument("-o", "--output", help="write the result as JSON")
    search.add_argument(
        "--scheduler",
        type=_scheduler_address,
        help="exhaustive search on Dask distributed: tcp://host:8786, or 'local' for a LocalCluster",
    )
    search.add_argument("--checkpoint", help="Dask: write progress here (default: OUTPUT.checkpoint.json)")
    search.add_argument("--resume", help="Dask: continue from this checkpoint file")
    search.set_defaults(func=_cmd_search)
