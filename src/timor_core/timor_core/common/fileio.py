"""Safe output files: a crash or a bad input never leaves a half-written, lost or unreadable user file.

Every file timor writes goes through here:

- atomically: a temp file beside the target, fsync, then rename (readers see the old or the new file);
- with the permissions a user expects: an existing file keeps its mode (a 0644 URDF read by
  robot_state_publisher under another user stays readable), a new one gets ``0666 & ~umask``;
- through symlinks: ``-o link.urdf`` replaces the link's target and the link stays (``colcon --symlink-install``);
- never onto something that is not a regular file (``/proc/version``, a device, a folder) or onto an input;
- several files all or nothing (:func:`write_files`): every target is checked before the first is written.

Errors are :class:`~timor_core.errors.InputError` naming the user's path, never a temp file.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from timor_core.errors import InputError

__all__ = [
    "atomic_write_chunks",
    "atomic_write_text",
    "atomic_write_bytes",
    "atomic_copy",
    "atomic_target",
    "write_json",
    "write_files",
    "output_target",
    "refuse_overwriting_inputs",
]


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def output_target(path: str | Path) -> Path:
    """The file an output path will replace: symlinks followed; refused if it exists and is not a regular file."""
    path = Path(path)
    if "\x00" in str(path):
        raise InputError("output path contains a NUL character", value=str(path))
    real = Path(os.path.realpath(path))
    try:
        st = os.stat(real)
    except FileNotFoundError:
        return real
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", file=path) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("output path is a folder, not a file", file=path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError("output path is not a regular file (device, pipe, socket or special file)", file=path)
    if real.parts[:2] in (("/", "proc"), ("/", "sys"), ("/", "dev")):
        raise InputError("output path is a special file of the system", file=path)
    return real


def _mode_for(target: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _cannot(path: str | Path, exc: OSError) -> InputError:
    return InputError(f"cannot write: {exc.strerror or exc}", file=str(path))


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """Yield a temp path beside the output (same suffix); on success it replaces the output, on error it goes.

    For writers that need a file name (video encoders, figure savers). The output keeps its mode, or gets
    ``0666 & ~umask`` if new; a symlink output is written through.
    """
    target = output_target(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}.tmp.", suffix=target.suffix, dir=target.parent)
        os.close(fd)
        os.chmod(tmp, _mode_for(target))
    except OSError as exc:
        raise _cannot(path, exc) from None
    try:
        yield Path(tmp)
        os.replace(tmp, target)
    except OSError as exc:
        _remove(tmp)
        raise _cannot(path, exc) from None
    except BaseException:
        _remove(tmp)
        raise


def _remove(tmp: str | Path) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write bytes to ``path`` atomically (see the module docstring); returns ``path``."""
    with atomic_target(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def atomic_write_chunks(path: str | Path, chunks: Iterable[str]) -> Path:
    """Write UTF-8 text made piece by piece (a big JSON document) to ``path`` atomically, never holding all of it."""
    with atomic_target(path) as tmp:
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            for chunk in chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write UTF-8 text to ``path`` atomically (see the module docstring); returns ``path``."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_copy(src: str | Path, dst: str | Path) -> Path:
    """Copy a file atomically: a temp file beside the target, then rename."""
    with atomic_target(dst) as tmp:
        try:
            shutil.copyfile(src, tmp)
        except OSError as exc:
            raise InputError(f"cannot copy: {exc.strerror or exc}", file=str(src)) from None
    return Path(dst)


def write_json(path: str | Path, data: Any, indent: int = 2) -> Path:
    """Write JSON atomically (creating the folder); NaN and infinity are refused, as JSON has none."""
    try:
        text = json.dumps(data, indent=indent, allow_nan=False) + "\n"
    except ValueError:
        raise InputError("cannot write JSON with NaN or infinite numbers", file=str(path)) from None
    return atomic_write_text(path, text)


def refuse_overwriting_inputs(output: str | Path, *inputs: str | Path | None, option: str = "output") -> None:
    """Refuse an output that is one of the inputs (the same file by any path, link or hard link)."""
    out = Path(output)
    for given in inputs:
        if given is None:
            continue
        src = Path(given)
        same = os.path.realpath(out) == os.path.realpath(src)
        if not same and out.exists() and src.exists():
            try:
                same = os.path.samefile(out, src)
            except OSError:
                same = False
        if same:
            raise InputError(f"the {option} would overwrite the input {src}; choose another file", file=str(out))


def write_files(files: Mapping[str | Path, str | bytes]) -> list[Path]:
    """Write several files all or nothing: check every target, write temps, then rename them all.

    If any target is unusable (a folder where a file should go, a device, a read-only folder), nothing is
    written. If a rename fails half-way (rare: the temps already sit in the target folders), the files
    already replaced are restored from hard-link backups.
    """
    plan = [
        (Path(p), output_target(p), data.encode("utf-8") if isinstance(data, str) else data)
        for p, data in files.items()
    ]
    temps: list[tuple[Path, Path, str]] = []
    try:
        for given, target, data in plan:
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
                with os.fdopen(fd, "wb") as fh:
                    fh.write(data)
                    fh.flush()
                    os.fsync(fh.fileno())
                os.chmod(tmp, _mode_for(target))
            except OSError as exc:
                raise _cannot(given, exc) from None
            temps.append((given, target, tmp))
        _replace_all(temps)
    finally:
        for _, _, tmp in temps:
            _remove(tmp)
    return [given for given, _, _ in plan]


def _replace_all(temps: list[tuple[Path, Path, str]]) -> None:
    backups: list[tuple[Path, str | None]] = []
    try:
        for given, target, tmp in temps:
            backup = None
            if target.exists():
                fd, backup = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".bak", dir=target.parent)
                os.close(fd)
                backups.append((target, backup))
                try:
                    shutil.copy2(target, backup)
                except OSError as exc:
                    raise _cannot(given, exc) from None
            else:
                backups.append((target, None))
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise _cannot(given, exc) from None
    except BaseException:
        for target, backup in reversed(backups):
            if backup is not None:
                os.replace(backup, target)
            else:
                _remove(target)
        raise
    finally:
        for _, backup in backups:
            if backup is not None:
                _remove(backup)
