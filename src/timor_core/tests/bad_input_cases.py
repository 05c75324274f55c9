"""The embedded set's copy, the writer, the loader and the error checks the bad-input tests share
(test_bad_input*.py)."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import timor_core.common.fileio
import timor_core.model.db
from timor_core.errors import InputError, TimorError
from timor_core.model.db import ModulesDB

GPM_FILE = Path(timor_core.__file__).parent / "data" / "geometric_primitive_modules" / "modules.json"
GPM: dict = json.loads(GPM_FILE.read_text(encoding="utf-8"))
UNSET = object()

EYE4 = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]


# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------
def gpm() -> dict:
    return copy.deepcopy(GPM)


def module_index(data: dict, module_id: str) -> int:
    """Index of a module in the ``modules`` list."""
    return [m["header"]["ID"] for m in data["modules"]].index(module_id)


def module_of(data: dict, module_id: str) -> dict:
    return data["modules"][module_index(data, module_id)]


def write_set(folder: Path, data: Any = None, text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "modules.json"
    path.write_text(text if text is not None else json.dumps(data, indent=2), encoding="utf-8")
    return path


def load_error(path: Path, kind: type[TimorError] = InputError) -> TimorError:
    with pytest.raises(kind) as info:
        ModulesDB.from_json_file(path)
    assert isinstance(info.value, TimorError)
    return info.value


def check_error(exc: BaseException, file: Path, path: str | None, value: Any = UNSET, *fragments: str) -> None:
    """The error is an InputError naming the file, the JSON path and the value; its text shows all three."""
    assert isinstance(exc, InputError), type(exc)
    text = str(exc)
    assert exc.file is not None and Path(exc.file).resolve() == file.resolve()
    assert exc.file in text
    if path is not None:
        assert exc.path == path
        assert path in text
    if value is not UNSET:
        if isinstance(value, float) and np.isnan(value):
            assert isinstance(exc.value, float) and np.isnan(exc.value)
        else:
            assert exc.value == value
        assert repr(value)[:20] in text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


def load_case(
    tmp_path: Path, mutate: Callable[[dict], Any], kind: type[TimorError] = InputError
) -> tuple[Path, TimorError]:
    data = gpm()
    mutate(data)
    path = write_set(tmp_path / "set", data)
    return path, load_error(path, kind)
