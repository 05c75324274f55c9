"""Packaging metadata that installers read: no deprecation warnings on install (issue 13)."""

from __future__ import annotations

import re
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_license_is_an_spdx_string_with_a_setuptools_that_reads_it():
    text = PYPROJECT.read_text(encoding="utf-8")
    # a TOML table (license = {text = "MIT"}) made setuptools warn "project.license as a TOML table is deprecated"
    # on every install; the SPDX string needs setuptools >= 77
    assert re.search(r'^license = "MIT"$', text, re.M)
    assert re.search(r'^requires = \["setuptools>=77"\]$', text, re.M)
