"""Argument helpers shared by the ``timor`` subcommand modules (cli, cli_export, cli_view, cli_configurator)."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import warnings
from collections.abc import Iterator

from timor_core.errors import InputError, TimorError, UnknownModuleError
from timor_core.limits import limit_hint, limits

__all__ = [
    "load_db",
    "embedded_db",
    "serial_assembly",
    "positive_int",
    "nonnegative_float",
    "positive_float",
    "seed",
    "port",
    "scheduler_address",
    "cost",
    "add_robot_arguments",
    "workers",
    "limited",
    "limited_float",
    "count",
    "name",
    "output_folder",
    "refuse_outputs_over_inputs",
    "refuse_unwritable_outputs",
    "add_mesh_arguments",
    "relative_mesh_warnings",
    "json_text",
    "resolve_robot_arguments",
    "Parser",
]


class Parser(argparse.ArgumentParser):
    """argparse with the project's error format: the usage, then one last line ``error: <command>: <message>``."""

    def error(self, message: str):  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(2, f"error: {self.prog}: {message}\n")


def add_robot_arguments(sp: argparse.ArgumentParser) -> None:
    """The robot of a subcommand: ``--db DB --modules ID ...`` or, as before, positional ``DB ID ...``."""
    sp.add_argument(
        "robot",
        nargs="*",
        metavar="DB MODULE",
        help="module set (modules.json, its folder, or an embedded name) and module IDs, base first; "
        "same as --db DB --modules ...",
    )
    sp.add_argument("--db", help="modules.json, its folder, or an embedded set name")
    sp.add_argument("--modules", nargs="+", help="module IDs of a serial chain, base first")
    sp.set_defaults(subparser=sp)


def resolve_robot_arguments(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """Fill ``args.db`` and ``args.modules`` from either form; refuse a mix or a missing part."""
    positional = getattr(args, "robot", None)
    if positional is None:
        return
    if positional:
        if args.db is not None or args.modules is not None:
            parser.error("give the robot either as DB MODULE ... or with --db/--modules, not both")
        args.db, args.modules = positional[0], positional[1:]
        args.db_option = None  # the value names itself: there is no --db to name
    if args.db is None or not args.modules:
        parser.error("the robot is missing: give DB MODULE ... (or --db DB --modules MODULE ...)")


MAX_SEED = 2**63 - 1
"""Largest seed (numpy takes any integer >= 0; this keeps the option finite and printable)."""


def load_db(source: str, option: str | None = "--db"):
    """The module set of ``--db``: a modules.json, its folder, or an embedded set name. A name that is neither is
    an error naming ``option`` (None: a positional DB, named by its value alone) and what there is to choose."""
    from timor_core.model.db import ModulesDB, db_source

    if source.endswith((".urdf", ".xacro")):
        raise InputError("a URDF is not a module set: convert it first with `timor import URDF -o modules.json`",
                         path=option, value=source)  # fmt: skip
    try:
        db_source(source)  # which set it names, by the load's own rule
    except UnknownModuleError as exc:
        if option is None:
            raise
        raise InputError(str(exc), path=option) from None
    return ModulesDB.load(source)


def embedded_db(name: str, option: str = "--db"):
    """The embedded module set ``name`` (an alias too), for a command that runs on one (``timor demo``); another name
    is an error naming ``option``, the sets there are and the closest."""
    from timor_core.model.db import ModulesDB

    try:
        return ModulesDB.from_name(name)
    except UnknownModuleError as exc:
        raise InputError(str(exc), path=option) from None


def serial_assembly(args: argparse.Namespace):
    """The serial assembly of ``args.modules`` (base first) from the module set ``args.db``."""
    from timor_core.model.assembly import ModuleAssembly

    return ModuleAssembly.from_serial_modules(load_db(args.db, getattr(args, "db_option", "--db")), args.modules)


def _float(text: str) -> float:
    try:
        x = float(text)
    except ValueError:
        return math.nan
    return x if math.isfinite(x) else math.nan


def nonnegative_float(text: str) -> float:
    """argparse type: a finite number >= 0."""
    x = _float(text)
    if not x >= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return x


def positive_float(text: str) -> float:
    """argparse type: a finite number > 0."""
    x = _float(text)
    if not x > 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return x


def _int(text: str) -> int | None:
    text = text.strip()
    if len(text) > 30:  # also keeps int() away from 5,000-digit strings
        return None
    try:
        return int(text)
    except ValueError:
        return None


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (at most 10**12)."""
    n = _int(text)
    if n is None or not 1 <= n <= 10**12:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def json_text(value, indent: int | None = None) -> str:
    """Standard JSON for printing: a non-finite number (an unreachable goal's cost, say) is written as null."""

    return json.dumps(_finite(value), indent=indent, allow_nan=False)


def limited(field: str, low: int = 1):
    """argparse type factory: an integer from ``low`` to the limit ``field`` of :mod:`timor_core.limits` (read when
    the option is parsed; the message says how to raise it)."""

    def parse(text: str) -> int:

        high = getattr(limits(), field)
        n = _int(text)
        if n is None or not low <= n <= high:
            raise argparse.ArgumentTypeError(f"expected an integer {low}-{high} ({limit_hint(field)}), got {text!r}")
        return n

    parse.__name__ = field
    return parse


def limited_float(field: str):
    """argparse type factory: a finite number from 0 to the limit ``field`` of :mod:`timor_core.limits`."""

    def parse(text: str) -> float:

        high = getattr(limits(), field)
        x = _float(text)
        if not 0 <= x <= high:
            raise argparse.ArgumentTypeError(f"expected a number 0-{high:g} ({limit_hint(field)}), got {text!r}")
        return x

    parse.__name__ = field
    return parse


def workers(text: str) -> int:
    """argparse type: a number of worker processes, 1 to the ``max_workers`` limit (more than the cores are cut
    to the cores unless the ``force_workers`` limit is set)."""
    return limited("max_workers")(text)


def count(low: int, high: int):
    """argparse type factory: an integer in [low, high]."""

    def parse(text: str) -> int:
        n = _int(text)
        if n is None or not low <= n <= high:
            raise argparse.ArgumentTypeError(f"expected an integer {low}-{high}, got {text!r}")
        return n

    return parse


def name(text: str) -> str:
    """argparse type: a robot, package or group name (letters, digits, '_', '.', '-'; also a safe file name)."""
    from timor_core.common.names import check_name

    try:
        return check_name(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message + f" (got {text!r})") from None


def output_folder(text: str) -> str:
    """argparse type: an output folder, which may not exist yet but must not be a file."""

    if os.path.exists(text) and not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} exists and is not a folder")
    return text


_OUTPUT_OPTIONS = {"output": "-o", "checkpoint": "--checkpoint", "solution": "--solution"}
_INPUT_ATTRIBUTES = ("file", "files", "task", "space", "resume", "urdf", "solution", "db")


def _input_paths(args: argparse.Namespace, outputs: tuple[str, ...]) -> list[str]:
    """The files a command reads, as :func:`_file_read` finds them, that are there."""
    found: list[str] = []
    for attr in _INPUT_ATTRIBUTES:
        value = getattr(args, attr, None)
        if attr in outputs or value is None:
            continue
        for given in value if isinstance(value, list) else [value]:
            path = _file_read(attr, given) if isinstance(given, str) and given else None
            if path is not None and os.path.exists(path):
                found.append(path)
    return found


def _file_read(attr: str, given: str) -> str | None:
    """The file the command reads for input ``attr`` given as ``given``, by the loader's own rule: ``--db`` as
    ``ModulesDB.load`` reads it (``model.db.db_source``: a folder's modules.json; an embedded set's name, none),
    ``--space`` as ``load_space`` does (``search.spaces.presets.space_source``: a preset's name, such as the
    default ``auto``, none, even beside a file of that name); the others as files."""
    if attr == "db":
        from timor_core.model.db import db_source

        try:
            source = db_source(given)
        except TimorError:  # neither a set nor a file: the command says so, naming the option
            return None
        return None if source is None else str(source)
    if attr == "space":
        from timor_core.search.spaces.presets import space_source

        space = space_source(given)
        return None if space is None else str(space)
    return given


def refuse_outputs_over_inputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output file that is one of the command's input files (the task, the module
    set's ``modules.json``, a space, a checkpoint to resume): ``-o`` must never replace what the user had.

    A command names its output attributes with ``set_defaults(file_outputs=(...))`` (default ``output`` and
    ``checkpoint``); writing the checkpoint over the one resumed from is what resuming does, and is allowed.
    """
    outputs = tuple(getattr(args, "file_outputs", ("output", "checkpoint")))
    given = [(a, out) for a in outputs if isinstance(out := getattr(args, a, None), str) and out]
    if not given:
        return
    from timor_core.common.fileio import refuse_overwriting_inputs

    inputs = _input_paths(args, outputs)
    for attr, out in given:
        read = [p for p in inputs if not (attr == "checkpoint" and p == getattr(args, "resume", None))]
        refuse_overwriting_inputs(out, *read, option=_OUTPUT_OPTIONS.get(attr, attr))
    seen: dict[str, str] = {}
    for attr, out in given:  # two outputs into one file: the later write would replace the earlier
        option, other = _OUTPUT_OPTIONS.get(attr, attr), seen.setdefault(os.path.realpath(out), attr)
        if other != attr:
            raise InputError(f"{_OUTPUT_OPTIONS.get(other, other)} and {option} name the same file", path=option,
                             value=out)  # fmt: skip


def refuse_unwritable_outputs(args: argparse.Namespace) -> None:
    """Refuse, before any work, an output (``-o`` file or folder, ``--solution``, ``--checkpoint``) whose folder
    cannot be written (read-only file system, no permission): a search found its answer, then lost it at the end."""
    for attr in ("output", "checkpoint", "solution", "out"):
        out = getattr(args, attr, None)
        if attr == "solution" and "solution" not in getattr(args, "file_outputs", ()):
            continue  # timor video's solution is its input
        if not (isinstance(out, str) and out):
            continue
        folder = os.path.realpath(out)  # through symbolic links: the folder really written
        while not os.path.exists(folder):  # the folders the command will make: the nearest one there is
            folder = os.path.dirname(folder)
        if not os.path.isdir(folder):  # the output file itself: its folder
            folder = os.path.dirname(folder)
        if not os.access(folder, os.W_OK | os.X_OK):
            option = "--out" if attr == "out" else _OUTPUT_OPTIONS.get(attr, attr)
            raise InputError(f"cannot write into {folder} (a read-only file system or no permission)", path=option,
                             value=out)  # fmt: skip


_MESH_URI_HELP = (
    "how mesh files are named: file (file:// URIs, the default), package (package://PACKAGE/<path in the set>), "
    "relative (the path as the module set writes it: relative to the set's folder, so the file must go there too) "
    "or path (plain absolute paths, for MuJoCo and other non-ROS tools)"
)


def add_mesh_arguments(sp: argparse.ArgumentParser) -> None:
    """``--mesh-uri`` and ``--package`` of the robot description exports."""
    sp.add_argument("--mesh-uri", choices=("file", "package", "relative", "path"), default="file", help=_MESH_URI_HELP)
    sp.add_argument("--package", type=name, help="package name for package:// mesh URIs (default: the set's name)")


@contextlib.contextmanager
def relative_mesh_warnings() -> Iterator[None]:
    """Print each ``RelativeMeshPaths`` warning of the exports run inside as one ``warning: --mesh-uri relative:``
    line on stderr, after them (the export layer decides when: ``export.formats.urdf_options.warn_relative_meshes``,
    for the CLI and the Python API alike); other warnings pass on."""
    from timor_core.export.formats.urdf_options import RelativeMeshPaths

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelativeMeshPaths)
        yield
    for w in caught:
        if isinstance(w.message, RelativeMeshPaths):
            m = w.message
            print(
                f"warning: --mesh-uri relative: the {m.count} mesh path(s) are relative to the module set's folder "
                f"{m.set_folder}, not to {m.folder}: write the file there, or use --mesh-uri file, package or path",
                file=sys.stderr,
            )
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


def cost(text: str) -> str:
    """argparse type: a cost descriptor (``mass``, ``mass_0.5,numJ_2``): known terms, weights finite and within
    ``timor_core.task.costs.MAX_WEIGHT``."""
    from timor_core.task.costs import CostFunction

    try:
        CostFunction.from_descriptor(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return text


def seed(text: str) -> int:
    """argparse type: a random seed, an integer >= 0."""
    n = _int(text)
    if n is None or not 0 <= n <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return n


def port(text: str) -> int:
    """argparse type: a TCP port, 0 (any free port) to 65535."""
    n = _int(text)
    if n is None or not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError(f"expected a port number 0-65535, got {text!r}")
    return n


def scheduler_address(text: str) -> str:
    """argparse type: a Dask scheduler address ``tcp://host:port`` (or ``local``), checked before Dask starts by
    the one reader of addresses, :func:`timor_core.search.dask_cluster.dask_connect.scheduler_address`."""
    if text == "local":
        return text
    from timor_core.search.dask_cluster.dask_connect import scheduler_address as parse

    try:
        address = parse(text)
    except InputError as exc:
        if exc.value is ...:  # (credentials: the address is never repeated)
            raise argparse.ArgumentTypeError(exc.message) from None
        raise argparse.ArgumentTypeError(f"{exc.message}, or 'local', got {exc.value!r}") from None
    assert address is not None
    return address
