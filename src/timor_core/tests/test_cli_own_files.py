"""A new user's own files through the ``timor`` command line (session 56's walk through the README): an output
that names one of the command's inputs is refused before any work, whatever the command, so ``-o`` never replaces
the user's module set, task, space or solution; the search space examples a user copies are spaces."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from conftest import EMBEDDED, REPO

from timor_core import ModulesDB
from timor_core.cli.app import main
from timor_core.errors import InputError
from timor_core.search.spaces.presets import load_space
from timor_core.task import Task

CHAIN = ["base", "J", "L_250", "J", "gripper"]


@pytest.fixture()
def own(tmp_path):
    """A user's folder: a copy of robco_like as ``lab_set/modules.json`` and of the embedded task as ``task.json``."""
    shutil.copytree(EMBEDDED / "robco_like", tmp_path / "lab_set")
    shutil.copy(EMBEDDED / "tasks" / "pick_and_place.json", tmp_path / "task.json")
    (tmp_path / "space.json").write_text('{"dof_max": 2, "modules": ["J", "L_250"], "max_links_between_joints": 1}')
    return tmp_path


def _run(argv, cwd, monkeypatch, capsys):
    monkeypatch.chdir(cwd)
    code = main(argv)
    return code, capsys.readouterr().err


# (argv, the input the output names): each writes over a file the command reads
CASES = [
    (["urdf", "lab_set", *CHAIN, "-o", "lab_set/modules.json"], "lab_set/modules.json"),
    (["urdf", "--db", "lab_set", "--modules", *CHAIN, "-o", "lab_set/../lab_set/modules.json"], "modules.json"),
    (["xacro", "--db", "lab_set/modules.json", "--modules", *CHAIN, "-o", "lab_set/modules.json"], "modules.json"),
    (["srdf", "--db", "lab_set", "--modules", *CHAIN, "--samples", "5", "-o", "lab_set/modules.json"], "modules.json"),
    (["mjcf", "lab_set", *CHAIN, "-o", "lab_set/modules.json"], "modules.json"),
    (["solve", "task.json", "--db", "lab_set", "--modules", *CHAIN, "--solution", "lab_set/modules.json"], "modules"),
    (["solve", "task.json", "--db", "lab_set", "--modules", *CHAIN, "--solution", "task.json"], "task.json"),
    (["search", "task.json", "--db", "lab_set", "--no-progress", "-o", "task.json"], "task.json"),
    (["search", "task.json", "--db", "lab_set", "--no-progress", "-o", "lab_set/modules.json"], "modules.json"),
    (["search", "task.json", "--db", "lab_set", "--space", "space.json", "--no-progress", "-o", "space.json"], "space"),
]


@pytest.mark.parametrize(("argv", "named"), CASES, ids=lambda v: " ".join(v[:1]) if isinstance(v, list) else None)
def test_an_output_over_an_input_is_refused_and_the_input_kept(own, monkeypatch, capsys, argv, named):
    before = {p: p.read_bytes() for p in (own / "lab_set" / "modules.json", own / "task.json", own / "space.json")}
    code, err = _run(argv, own, monkeypatch, capsys)
    assert code == 2, err
    last = err.strip().splitlines()[-1]
    assert "would overwrite the input" in last and named in last, last
    assert {p: p.read_bytes() for p in before} == before  # nothing the user had is touched
    assert sorted(p.name for p in own.iterdir()) == ["lab_set", "space.json", "task.json"]  # nor anything written


def test_outputs_beside_the_inputs_are_written(own, monkeypatch, capsys):
    code, err = _run(["urdf", "lab_set", *CHAIN, "-o", "lab_set/arm.urdf"], own, monkeypatch, capsys)
    assert code == 0, err
    assert (own / "lab_set" / "arm.urdf").read_text().startswith("<?xml")


def test_an_output_named_like_an_embedded_set_or_a_preset_space_is_written(own, monkeypatch, capsys):
    """An input given by a name that is no file (the embedded ``robco_like``, ``--space auto``: the default) is
    nothing to overwrite: ``-o robco_like`` and ``-o auto`` write new files (they were refused as 'would overwrite
    the input robco_like', so every ``timor search -o auto`` was)."""
    import argparse

    from timor_core.cli.args import refuse_outputs_over_inputs

    code, err = _run(["urdf", "robco_like", *CHAIN, "-o", "robco_like"], own, monkeypatch, capsys)
    assert code == 0, err
    assert (own / "robco_like").read_text().startswith("<?xml")
    search = argparse.Namespace(task="task.json", db="robco_like", space="auto", output="auto", checkpoint=None)
    refuse_outputs_over_inputs(search)  # the search's own check, without its search
    search.output = "task.json"  # a file that is there still is refused
    with pytest.raises(InputError, match="would overwrite the input task.json"):
        refuse_outputs_over_inputs(search)


def test_two_outputs_into_one_file_are_refused(own):
    """``timor search --checkpoint r.json -o r.json``: the result would replace the checkpoint (or the other way
    round); refused before any work, whatever the spelling of the path."""
    import argparse

    from timor_core.cli.args import refuse_outputs_over_inputs

    search = argparse.Namespace(task=str(own / "task.json"), db="robco_like", space="auto", output=str(own / "r.json"),
                                checkpoint=str(own / "lab_set" / ".." / "r.json"))  # fmt: skip
    with pytest.raises(InputError, match="-o and --checkpoint name the same file") as refused:
        refuse_outputs_over_inputs(search)
    assert refused.value.value == search.checkpoint
    search.checkpoint = str(own / "r.ckpt.json")
    refuse_outputs_over_inputs(search)  # two files: fine


def test_a_video_or_plot_over_its_solution_is_refused(own, monkeypatch, capsys):
    kept = b'{"the user\'s": "solution"}'  # refused before it is read: any text will do
    (own / "sol.json").write_bytes(kept)
    for argv in (
        ["video", "sol.json", "--task", "task.json", "--db", "lab_set", "-o", "sol.json"],
        ["plot", "trajectory", "sol.json", "--task", "task.json", "--db", "lab_set", "-o", "sol.json"],
    ):
        code, err = _run(argv, own, monkeypatch, capsys)
        assert code == 2 and "would overwrite the input sol.json" in err, err
    assert (own / "sol.json").read_bytes() == kept


def _space_examples(capsys) -> dict[str, str]:
    readme = " ".join((REPO / "README.md").read_text().split())  # its lines joined
    with pytest.raises(SystemExit):
        main(["search", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    doc = " ".join((load_space.__doc__ or "").split())
    found = {
        "README": re.search(r"`--space FILE` .*? e\.g\. `(\{.*?\})`", readme),
        "--space help": re.search(r"such as (\{.*?\}) ", help_text),
        "load_space": re.search(r"e\.g\. ``(\{.*?\})``", doc),
    }
    assert all(found.values()), found
    return {k: m.group(1) for k, m in found.items() if m}


@pytest.mark.parametrize("where", ["README", "--space help", "load_space"])
def test_the_space_examples_a_user_copies_are_spaces(where, tmp_path, monkeypatch, capsys):
    """They were refused (``the options allow arbitrarily long chains``): nothing bounded the links after the last
    joint. Each loads, as JSON and as ``--space FILE``, on the module set its IDs are from."""
    text = _space_examples(capsys)[where]
    assert len(load_space(json.loads(text), ModulesDB.from_name("robco_like"))) > 0
    (tmp_path / "space.json").write_text(text)
    shutil.copy(EMBEDDED / "tasks" / "pick_and_place.json", tmp_path / "task.json")
    argv = ["search", "task.json", "--db", "robco_like", "--space", "space.json", "--budget-evals", "1"]
    argv.append("--no-progress")
    code, err = _run(argv, tmp_path, monkeypatch, capsys)
    assert code == 0, err


STL = """solid plate
facet normal 0 0 1
outer loop
vertex 0 0 0.02
vertex 0.08 0 0.02
vertex 0 0.08 0.02
endloop
endfacet
endsolid plate
"""


def _with_a_mesh(folder):
    """The user's set with the base's visual a mesh file, ``meshes/plate.stl``, beside its modules.json."""
    (folder / "lab_set" / "meshes").mkdir()
    (folder / "lab_set" / "meshes" / "plate.stl").write_text(STL)
    data = json.loads((folder / "lab_set" / "modules.json").read_text())
    base = next(m for m in data["modules"] if m["header"]["ID"] == "base")
    base["bodies"][0]["visual"] = [{"type": "mesh", "parameters": {"file": "meshes/plate.stl"}}]
    (folder / "lab_set" / "modules.json").write_text(json.dumps(data))


@pytest.mark.parametrize("command", ["urdf", "xacro", "moveit-config"])
def test_relative_mesh_paths_written_away_from_the_set_are_warned_about(own, monkeypatch, capsys, command):
    """``--mesh-uri relative`` writes the paths as the set does, relative to its folder: a URDF written elsewhere
    named meshes no reader found (PyBullet refused it, yourdfpy left the mesh out without a word)."""
    _with_a_mesh(own)
    away = "cfg" if command == "moveit-config" else f"out/arm.{command}"
    beside = "lab_set" if command == "moveit-config" else f"lab_set/arm.{command}"
    robot = ["--db", "lab_set", "--modules", *CHAIN, "--mesh-uri", "relative"]
    extra = ["--samples", "5"] if command == "moveit-config" else []
    code, err = _run([command, *robot, *extra, "-o", away], own, monkeypatch, capsys)
    assert code == 0, err
    warning = [line for line in err.splitlines() if line.startswith("warning: --mesh-uri relative")]
    assert len(warning) == 1 and str((own / "lab_set").resolve()) in warning[0], err
    code, err = _run([command, *robot, *extra, "-o", beside], own, monkeypatch, capsys)
    assert code == 0 and "warning" not in err, err
    code, err = _run([command, *robot[:-1], "file", *extra, "-o", away], own, monkeypatch, capsys)
    assert code == 0 and "warning" not in err, err
    with pytest.raises(SystemExit):
        main([command, "--help"])
    assert "relative to the set's folder" in " ".join(capsys.readouterr().out.split())


def test_relative_mesh_paths_from_the_python_api_are_warned_about_once(own, monkeypatch):
    """``assembly.to_urdf(mesh_uri="relative", write_to=...)`` wrote a URDF away from the set without a word (only
    the CLI warned): the export layer, which both pass through, warns, once per file written."""
    import warnings

    from timor_core.export.formats.moveit_config import write_moveit_config
    from timor_core.export.formats.urdf_options import RelativeMeshPaths
    from timor_core.model.assembly import ModuleAssembly

    _with_a_mesh(own)
    monkeypatch.chdir(own)
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("lab_set"), CHAIN)
    writes = {
        "urdf": lambda to: assembly.to_urdf(mesh_uri="relative", write_to=to),
        "xacro": lambda to: assembly.to_xacro(mesh_uri="relative", write_to=to),
        "moveit": lambda to: write_moveit_config(assembly, to.parent, mesh_uri="relative", n_samples=5),
    }
    for kind, write in writes.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write(own / "out" / f"arm.{kind}")
        assert [type(w.message) for w in caught] == [RelativeMeshPaths], (kind, caught)
        assert str((own / "lab_set").resolve()) in str(caught[0].message)
        assert caught[0].filename == __file__  # it names the user's line, not the exporter's
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            write(own / "lab_set" / f"arm.{kind}")  # beside the set: the paths hold
            assembly.to_urdf(mesh_uri="file", write_to=own / "out" / "file.urdf")
            assembly.to_urdf(mesh_uri="relative")  # no file: nothing to warn of
        assert not caught, (kind, caught)


def test_absolute_mesh_paths_of_a_set_are_not_warned_about(own, monkeypatch):
    """A set may name its meshes by an absolute path or a ``file://`` URI (inside its folder): ``relative`` writes
    them as given, found from anywhere, yet the writer warned they were relative to the set's folder."""
    import warnings

    from timor_core.model.assembly import ModuleAssembly

    _with_a_mesh(own)
    monkeypatch.chdir(own)
    data = json.loads((own / "lab_set" / "modules.json").read_text())
    visual = next(m for m in data["modules"] if m["header"]["ID"] == "base")["bodies"][0]["visual"][0]
    for given in (str(own / "lab_set" / "meshes" / "plate.stl"), (own / "lab_set" / "meshes" / "plate.stl").as_uri()):
        visual["parameters"]["file"] = given
        (own / "lab_set" / "modules.json").write_text(json.dumps(data))
        assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("lab_set"), CHAIN)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            text = assembly.to_urdf(mesh_uri="relative", write_to=own / "out" / "arm.urdf")
        assert f'filename="{given}"' in text and not caught, (given, caught)


def test_result_show_of_another_kind_of_file_says_what_it_looks_like(own, monkeypatch, capsys):
    """It said ``$.version: unsupported search result version (expected 1) (got None)`` of a task or module set."""
    (own / "assembly.json").write_text('{"moduleSet": "robco_like", "moduleOrder": ["base"]}')
    for file, kind in (
        ("task.json", "a task"),
        ("lab_set/modules.json", "a module set"),
        ("assembly.json", "an assembly"),
    ):
        code, err = _run(["result", "show", file], own, monkeypatch, capsys)
        assert code == 2, err
        assert (
            err.strip()
            == f"error: {file}: $: not a search result (what `timor search -o` writes); it looks like {kind}"
        )
    (own / "result.json").write_text('{"version": 1, "optimizer": "x", "task": "t", "db": "d", "cost": "mass"}')
    code, err = _run(["result", "show", "result.json"], own, monkeypatch, capsys)
    assert code == 2 and err.strip() == "error: result.json: $: missing required field 'funnel'", err


@pytest.mark.parametrize(
    ("spoil", "path", "message"),
    [
        (lambda d: d["funnel"].pop("filters"), "$.funnel", "missing required field 'filters'"),
        (lambda d: d["funnel"]["filters"][1].pop("entered"), "$.funnel.filters[1]", "missing required field 'entered'"),
        (lambda d: d["best"].pop("ids"), "$.best", "missing required field 'ids'"),
        (lambda d: d["best"].pop("cost"), "$.best", "missing required field 'cost'"),
        (lambda d: d.pop("cost"), "$", "missing required field 'cost'"),
        (lambda d: d["best"]["goals"]["g1"].pop("success"), "$.best.goals.g1", "missing required field 'success'"),
        # what the guess of the path from the missing key named "$" (a TypeError) or did not catch (AttributeError)
        (lambda d: d.update(funnel=[]), "$.funnel", "expected a JSON object"),
        (lambda d: d["funnel"].update(filters={"name": "reach"}), "$.funnel.filters", "expected a JSON array"),
        (lambda d: d["funnel"]["filters"].__setitem__(0, 3), "$.funnel.filters[0]", "expected a JSON object"),
        (lambda d: d.update(best=5), "$.best", "expected a JSON object"),
        (lambda d: d["best"].update(ids=7), "$.best.ids", "expected a JSON array"),
        (lambda d: d["best"].update(goals=[]), "$.best.goals", "expected a JSON object"),
        (lambda d: d["best"]["goals"].update(g1=None), "$.best.goals.g1", "expected a JSON object"),
        (lambda d: d.update(task_goals=[{"type": "at"}]), "$.task_goals[0]", "missing required field 'id'"),
        # a malformed value was named "$" ("malformed search result: ValueError(...)"): now its own path
        (
            lambda d: d["funnel"]["filters"][1].update(entered="x"),
            "$.funnel.filters[1].entered",
            "expected a whole number",
        ),
        (
            lambda d: d["funnel"]["filters"][0].update(reasons={"r": []}),
            "$.funnel.filters[0].reasons.r",
            "expected a whole number",
        ),
        (lambda d: d["best"].update(cost="x"), "$.best.cost", "expected a number"),
        (lambda d: d["best"]["goals"]["g1"].update(q=["a"]), "$.best.goals.g1.q[0]", "expected a number"),
        (lambda d: d.update(evaluations="many"), "$.evaluations", "expected a whole number"),
        (lambda d: d.update(history=5), "$.history", "expected a JSON array"),
        (lambda d: d.update(task_goals=[{"id": "g1", "type": "jump"}]), "$.task_goals[0].type", "unknown goal type"),
    ],
)
def test_a_field_missing_below_the_top_of_a_result_is_named_by_its_path(tmp_path, spoil, path, message):
    """A KeyError names only the key: a funnel row's or the best assembly's missing field was called ``$.entered``
    or ``$.ids``, a top-level field the file is not missing; then its path was guessed from the key, and a funnel,
    row or goal that is no object was named ``$`` (or crashed the command). Each reader now reads at its JSON path
    with ``jsonfields``: a missing field is named by its object's path and its key, as in every other file."""
    from timor_core.errors import FormatError
    from timor_core.search.evaluation.result import SearchResult

    data = SearchResult("ExhaustiveSearch", "t", "db", "mass").to_json_data()
    data["funnel"] = {"filters": [{"name": "reach", "entered": 3, "passed": 1}, {"name": "ik", "entered": 1,
                                                                                "passed": 1}]}  # fmt: skip
    data["best"] = {"ids": ["base", "J"], "cost": 1.0, "goals": {"g1": {"q": [0.1], "success": True}}}
    assert SearchResult.from_json_data(json.loads(json.dumps(data))).best_cost == 1.0
    spoil(data)
    with pytest.raises(FormatError) as info:
        SearchResult.from_json_data(data, file=tmp_path / "r.json")
    assert info.value.path == path and info.value.message.startswith(message), info.value
    assert str(info.value).startswith(f"{tmp_path / 'r.json'}: {path}: {message}")


def test_a_search_space_without_assemblies_is_refused_naming_the_option(own, monkeypatch, capsys):
    """A module set whose arm is one module (an imported robot with another set's gripper) has no assembly in the
    default space: the search reported 'no assembly of the space reaches farther than -inf m'."""
    from timor_core.search import ExhaustiveSearch

    (own / "links.json").write_text('{"dof_max": 3, "modules": ["L_100"], "max_modules": 4}')
    for algorithm in ("exhaustive", "random"):
        argv = ["search", "task.json", "--db", "lab_set", "--space", "links.json", "--algorithm", algorithm]
        code, err = _run([*argv, "--no-progress"], own, monkeypatch, capsys)
        assert code == 2 and err.startswith("error: --space: the search space holds no assembly of module set"), err
    db = ModulesDB.from_json_file(own / "lab_set" / "modules.json")
    result = ExhaustiveSearch(load_space(own / "links.json", db)).optimize(Task.from_json_file(own / "task.json"), db)
    assert "the search space holds no assembly" in result.summary() and "-inf" not in result.summary()


def test_a_misspelt_module_set_names_the_option_both_things_it_could_be_and_the_closest(own, monkeypatch, capsys):
    """``--db lab_sett`` said only 'no embedded module set named ...', as if the user's folder were not a choice;
    then it named both but not the option (``timor search task.json --db robco_lik``: which of the inputs?)."""
    neither = (
        "is neither an embedded module set (geometric_primitive_modules, robco_like) nor a modules.json or a folder "
        f"holding one (none of that name in {own})"
    )
    code, err = _run(["urdf", "lab_sett", *CHAIN], own, monkeypatch, capsys)  # positional: the value names itself
    assert code == 2 and err.strip() == f"error: 'lab_sett' {neither}; did you mean 'lab_set'?", err
    for argv, typo, meant in (
        (["urdf", "--db", "lab_sett", "--modules", *CHAIN], "lab_sett", "lab_set"),
        (["search", "task.json", "--db", "robco_lik", "--no-progress"], "robco_lik", "robco_like"),
        (
            ["search", "task.json", "--db", "robco", "--budget-evals", "1", "--no-progress", "-o", "robco"],
            "robco",
            None,
        ),  # an alias: a set
        (["solve", "task.json", "--db", "xyz", "--modules", *CHAIN], "xyz", ""),
    ):
        code, err = _run(argv, own, monkeypatch, capsys)
        if meant is None:
            assert code == 0, err
            continue
        hint = f"; did you mean {meant!r}?" if meant else ""
        assert code == 2 and err.strip() == f"error: --db: {typo!r} {neither}{hint}", err
    assert _run(["urdf", "lab_set", *CHAIN], own, monkeypatch, capsys)[0] == 0
    assert _run(["urdf", "robco_like", *CHAIN], own, monkeypatch, capsys)[0] == 0


def test_an_output_named_like_a_preset_beside_a_file_of_that_name_is_written(own, monkeypatch, capsys):
    """``-o auto`` with a file named ``auto`` in the folder was refused ('would overwrite the input auto') because
    ``--space`` defaults to the preset ``auto``, though the search reads the preset, not the file; the check and the
    loaders now ask one function each which file they read (``space_source``, ``db_source``)."""
    import argparse

    from timor_core.cli.args import refuse_outputs_over_inputs
    from timor_core.model.db import db_source
    from timor_core.search.spaces.presets import space_source

    monkeypatch.chdir(own)
    (own / "auto").write_text("not a space")
    (own / "robco_like").mkdir()  # a folder named like an embedded set, holding no set: the set is read
    assert space_source("auto") is None and db_source("robco_like") is None
    argv = ["search", "task.json", "--db", "robco_like", "--budget-evals", "2", "--no-progress", "-o", "auto"]
    code, err = _run(argv, own, monkeypatch, capsys)
    assert code == 0, err
    assert json.loads((own / "auto").read_text())["optimizer"] == "ExhaustiveSearch"
    search = argparse.Namespace(task="task.json", db="robco_like", space="auto", output="robco_like/x", checkpoint=None)
    refuse_outputs_over_inputs(search)
    search.space, search.output = "space.json", "space.json"  # a space file is read: still refused
    with pytest.raises(InputError, match="would overwrite the input space.json"):
        refuse_outputs_over_inputs(search)
    search.space, search.db, search.output = "auto", "lab_set", "lab_set/modules.json"
    with pytest.raises(InputError, match="would overwrite the input lab_set/modules.json"):
        refuse_outputs_over_inputs(search)


def test_a_folder_without_a_module_set_is_named_as_that(own, monkeypatch, capsys):
    """``--db lab_set`` whose modules.json is gone said 'none of that name in CWD' of a folder that is there."""
    (own / "lab_set" / "modules.json").unlink()
    code, err = _run(["urdf", "lab_set", *CHAIN], own, monkeypatch, capsys)
    assert code == 2 and err.strip() == "error: lab_set/modules.json: file not found", err
    (own / "robco_like").mkdir()  # a folder named like an embedded set (an output folder, say) keeps the set's name
    assert _run(["urdf", "robco_like", *CHAIN], own, monkeypatch, capsys)[0] == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "task.json", "--db", "lab_set", "--no-progress", "-o", "locked/deeper/result.json"],
        ["solve", "task.json", "--db", "lab_set", "--modules", *CHAIN, "--solution", "locked/solution.json"],
        ["moveit-config", "--db", "lab_set", "--modules", *CHAIN, "-o", "locked/cfg"],
    ],
    ids=["search", "solve", "moveit-config"],
)
def test_an_output_folder_that_cannot_be_written_is_refused_before_any_work(own, monkeypatch, capsys, argv):
    """A search into a read-only folder ran to its end, then lost its answer ('cannot write: Read-only file
    system'). The folder is checked first (here made unwritable by access(2) saying so, as on a read-only mount)."""
    import os

    from timor_core.search import ExhaustiveSearch
    from timor_core.task import point_to_point

    (own / "locked").mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and not str(p).endswith("locked"))
    for work in ((ExhaustiveSearch, "optimize"), (point_to_point, "solve_point_to_point")):
        monkeypatch.setattr(*work, lambda *a, **k: pytest.fail("the work started"))
    code, err = _run(argv, own, monkeypatch, capsys)
    option = {"solve": "--solution"}.get(argv[0], "-o")
    expected = f"error: {option}: cannot write into {own / 'locked'} (a read-only file system or no permission)"
    assert code == 2 and err.strip().startswith(expected), err
    assert list((own / "locked").iterdir()) == []


def test_an_output_through_a_symbolic_link_is_checked_where_it_lands(own, monkeypatch, capsys):
    """``-o link/../result.json``, ``link`` a symbolic link to ``locked/inner``: the kernel resolves ``..`` from the
    link's target, so the file goes into ``locked`` (unwritable); the check looks there, not at the folder the path
    names lexically (``os.path.abspath`` gave this test's folder, writable)."""
    import os

    from timor_core.search import ExhaustiveSearch

    (own / "locked" / "inner").mkdir(parents=True)
    (own / "link").symlink_to(own / "locked" / "inner")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: real_access(p, mode) and not str(p).endswith("locked"))
    monkeypatch.setattr(ExhaustiveSearch, "optimize", lambda *a, **k: pytest.fail("the work started"))
    argv = ["search", "task.json", "--db", "lab_set", "--no-progress", "-o", "link/../result.json"]
    code, err = _run(argv, own, monkeypatch, capsys)
    assert code == 2 and f"cannot write into {own / 'locked'} " in err, err
