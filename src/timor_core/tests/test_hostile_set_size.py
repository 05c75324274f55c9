"""Large module sets (session 57): ``timor db info`` counts the possible connections without listing them. The list
is quadratic in the modules: a 28 MB set of 20,000 links, each fitting every other, grew past 17 GB and was killed
after 9 minutes; the count is linear in the connectors."""

from __future__ import annotations

import json
import time
from importlib import resources

import pytest
from hostile import memory_cap, time_cap
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.cli.app import main

IDENTITY = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]


def _robco_with_links(n: int) -> dict:
    """robco_like with ``n`` more copies of its L_100 (a male and a female robco connector each)."""
    data = json.loads((resources.files("timor_core") / "data" / "robco_like" / "modules.json").read_text())
    link = json.dumps(next(m for m in data["modules"] if m["header"]["ID"] == "L_100"))
    data["modules"] += [json.loads(link.replace("L_100", f"X{i}")) for i in range(n)]
    return data


def test_db_info_of_a_set_of_2000_links_counts_its_connections_in_bounded_memory(tmp_path, capsys):
    (tmp_path / "modules.json").write_text(json.dumps(_robco_with_links(2000)))
    db = ModulesDB.from_json_file(tmp_path / "modules.json")
    genders = [c.gender for m in db for c in m.connectors.values() if c.type == "robco"]
    expected = genders.count("m") * genders.count("f")  # robco_like: one size, m/f only; pairs counted once
    capsys.readouterr()
    with memory_cap(768 * 2**20), time_cap(60):  # the list of ~8 million connections needed gigabytes
        assert main(["db", "info", str(tmp_path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["possible_connections"] == expected


def _connector(k: int, kind: tuple[str, float, str]) -> dict:
    kind_type, size, gender = kind
    return {"ID": f"c{k}", "pose": IDENTITY, "gender": gender, "type": kind_type, "size": [size]}


KINDS = st.tuples(st.sampled_from(["robco", "other", "base", "eef"]), st.sampled_from([0.1, 0.2]),
                  st.sampled_from(["m", "f", "h"]))  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(KINDS, min_size=1, max_size=4), min_size=1, max_size=6))
def test_the_count_equals_the_length_of_the_list_for_any_connectors(modules):
    inertia = [[0.01, 0, 0], [0, 0.01, 0], [0, 0, 0.01]]
    data = {"modules": [{"header": {"ID": f"m{i}", "name": f"m{i}"}, "bodies": [{
        "ID": f"b{i}", "mass": 1.0, "inertia": inertia, "r_com": [0, 0, 0],
        "connectors": [_connector(k, kind) for k, kind in enumerate(kinds)]}]}
        for i, kinds in enumerate(modules)]}  # fmt: skip
    db = ModulesDB.from_json_data(data, name="fuzz")
    assert db.possible_connection_count == len(db.possible_connections)


def test_a_search_space_over_2000_links_is_refused_at_once_in_bounded_memory(tmp_path):
    """The exp2 space over robco_like with 2,000 more links: exploring its automaton tried every module after every
    state found (some 30 million steps, a gigabyte and more, half a minute); now refused as soon as the states found
    times the modules to try exceed MAX_STEPS."""
    from timor_core.search import load_space
    from timor_core.search.spaces.automaton import MAX_STEPS
    from timor_core.search.spaces.rules import SearchSpaceError

    db = ModulesDB.from_json_data(_robco_with_links(2000), name="links")
    start = time.process_time()
    with memory_cap(512 * 2**20), time_cap(30), pytest.raises(SearchSpaceError, match=f"more than {MAX_STEPS} steps"):
        load_space("exp2", db)
    assert time.process_time() - start < 3.0


def test_the_space_steps_are_a_limit_a_user_can_raise():
    """``max_space_steps`` is a limit like the others: the refusal names it and how to raise it, and a larger one
    lets a space over a big catalogue through (7 joints over 400 modules took 16 s before the bound; over 50, 0.3 s)."""
    from timor_core.limits import override_limits
    from timor_core.search import load_space
    from timor_core.search.spaces.rules import SearchSpaceError

    db = ModulesDB.from_json_data(_robco_with_links(50), name="links")
    options = {"dof_max": 7, "max_modules": 16}
    with override_limits(max_space_steps=10_000), pytest.raises(SearchSpaceError, match="TIMOR_MAX_SPACE_STEPS"):
        load_space(options, db)
    with override_limits(max_space_steps=1_000_000):
        assert load_space(options, db).count > 10**9
