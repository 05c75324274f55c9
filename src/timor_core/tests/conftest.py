"""Shared fixtures: the embedded module sets and, when present, the real CoBRA data in ../shared."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from hypothesis import settings

from timor_core import ModulesDB

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
