"""Packaging metadata that installers read: no deprecation warnings on install (issue 13)."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    data = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    # a TOML table ({text = "MIT"}) made setuptools warn "project.license as a TOML table is deprecated" on every
    # install; the SPDX string needs setuptools >= 77
    assert data["project"]["license"] == "MIT"
    assert "setuptools>=77" in data["build-system"]["requires"]
