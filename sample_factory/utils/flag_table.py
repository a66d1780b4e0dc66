"""Command-line flags declared as data: a tab-separated table read into argparse.

A flag declaration is a row of facts (name, type, default, choices, help), so the package keeps its flags in
``flags.tsv`` files next to the code that reads them, and titles of the ``--help`` sections in
``flag_groups.tsv``. Code keeps only what is not a fact: the type functions and the defaults computed on the
running machine, both passed in by name. Row order is ``--help`` order.

``flags.tsv`` columns: ``group`` (the section a function adds), ``flag`` (``--name``), ``type`` (a name from the
``types`` given, ``store_true`` for a switch without a value, or empty for a plain string without a type
function), ``default`` (a JSON value; ``required`` for a flag that must be given; an identifier of ``computed``,
called each time the flag is added; empty for argparse's own default), ``choices`` (space-separated, converted by
the type), ``nargs`` and ``help``. ``flag_groups.tsv`` columns: ``group``, ``title``, ``description``.

Only stdlib imports: the launcher reads its flags this way and must start without numpy or torch.
"""

from __future__ import annotations

import argparse
import copy
import csv
import io
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

FLAGS_FILE = "flags.tsv"
GROUPS_FILE = "flag_groups.tsv"
FLAG_COLUMNS = ("group", "flag", "type", "default", "choices", "nargs", "help")
GROUP_COLUMNS = ("group", "title", "description")
SWITCH = "store_true"
REQUIRED = "required"
NO_DEFAULT = object()  # the cell was empty: argparse's own default applies

TypeFunction = Callable[[str], Any]
ArgumentTarget = argparse.ArgumentParser | argparse._ArgumentGroup


class FlagTableError(ValueError):
    """A flag table that cannot be read: the message names the file, the row and the fix."""


@dataclass(frozen=True)
class FlagSpec:
    """One row of ``flags.tsv``, checked and converted."""

    group: str
    flag: str
    type_name: str
    default: Any  # a JSON value, or NO_DEFAULT
    computed: str | None  # the name of the default's function in the table's ``computed``
    required: bool
    choices: tuple[Any, ...] | None
    nargs: str | None
    help: str


@dataclass(frozen=True)
class FlagTable:
    """The flags of one package folder and the titles of their sections."""

    source: str
    flags: tuple[FlagSpec, ...]
    groups: Mapping[str, tuple[str, str | None]]
    types: Mapping[str, TypeFunction]
    computed: Mapping[str, Callable[[], Any]]

    def add_flags(self, target: ArgumentTarget, group: str) -> None:
        """Add every flag of ``group``, in table order, to a parser or an argument group."""
        specs = [spec for spec in self.flags if spec.group == group]
        if not specs:
            raise FlagTableError(f"{self.source}: no flag has group {group!r}; add its rows to the table")
        for spec in specs:
            target.add_argument(spec.flag, **self._argument_kwargs(spec))

    def add_group(self, parser: argparse.ArgumentParser, group: str) -> argparse._ArgumentGroup:
        """A ``--help`` section titled as ``flag_groups.tsv`` says, holding the flags of ``group`` (if any)."""
        if group not in self.groups:
            raise FlagTableError(f"{self.source}: group {group!r} has no row in {GROUPS_FILE}; add its title there")
        title, description = self.groups[group]
        section = parser.add_argument_group(title, description)
        if any(spec.group == group for spec in self.flags):
            self.add_flags(section, group)
        return section

    def _argument_kwargs(self, spec: FlagSpec) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"help": spec.help}
        if spec.type_name == SWITCH:
            kwargs["action"] = SWITCH
        elif spec.type_name:
            kwargs["type"] = self.types[spec.type_name]
        if spec.required:
            kwargs["required"] = True
        elif spec.computed:
            kwargs["default"] = self.computed[spec.computed]()
        elif spec.default is not NO_DEFAULT:
            kwargs["default"] = copy.deepcopy(spec.default)  # a list default must not be shared between parsers
        if spec.choices is not None:
            kwargs["choices"] = list(spec.choices)
        if spec.nargs:
            kwargs["nargs"] = spec.nargs
        return kwargs


def read_flag_table(
    folder: Traversable,
    types: Mapping[str, TypeFunction],
    computed: Mapping[str, Callable[[], Any]] | None = None,
) -> FlagTable:
    """Read ``flags.tsv`` (and ``flag_groups.tsv`` when present) from ``folder``, e.g.
    ``importlib.resources.files("sample_factory.cfg")``; every cell is checked here, so a typo fails at start-up."""
    computed = dict(computed or {})
    flags_file = folder.joinpath(FLAGS_FILE)
    source = str(flags_file)
    rows = _read_rows(flags_file, FLAG_COLUMNS)
    flags = tuple(_flag_spec(row, f"{source}:{line}", types, computed) for line, row in rows)
    _check_unique(flags, source)
    groups = _read_groups(folder.joinpath(GROUPS_FILE))
    return FlagTable(source=source, flags=flags, groups=groups, types=dict(types), computed=computed)


def _check_unique(flags: tuple[FlagSpec, ...], source: str) -> None:
    seen = set()
    for spec in flags:
        if spec.flag in seen:
            raise FlagTableError(f"{source}: {spec.flag} is declared twice; keep one row")
        seen.add(spec.flag)


def _read_groups(path: Traversable) -> dict[str, tuple[str, str | None]]:
    """Section id -> (title, description); none when the table has no ``flag_groups.tsv``."""
    if not path.is_file():
        return {}
    return {row["group"]: (row["title"], row["description"] or None) for _, row in _read_rows(path, GROUP_COLUMNS)}


def _read_rows(path: Traversable, columns: tuple[str, ...]) -> list[tuple[int, dict[str, str]]]:
    """``(line number, row)`` pairs; the header line must name exactly ``columns``."""
    reader = csv.DictReader(io.StringIO(path.read_text(encoding="utf-8")), delimiter="\t", quoting=csv.QUOTE_NONE)
    if tuple(reader.fieldnames or ()) != columns:
        raise FlagTableError(f"{path}: the header must be the tab-separated columns {columns}, not {reader.fieldnames}")
    rows = []
    for row in reader:
        if None in row or None in row.values():
            raise FlagTableError(f"{path}:{reader.line_num}: expected {len(columns)} tab-separated cells")
        rows.append((reader.line_num, row))
    return rows


def _flag_spec(
    row: dict[str, str], where: str, types: Mapping[str, TypeFunction], computed: Mapping[str, Callable[[], Any]]
) -> FlagSpec:
    flag, type_name = row["flag"], row["type"]
    if not flag.startswith("--"):
        raise FlagTableError(f"{where}: flag {flag!r} must be written with its dashes, e.g. --{flag}")
    if type_name and type_name != SWITCH and type_name not in types:
        known = ", ".join(sorted([*types, SWITCH]))
        raise FlagTableError(f"{where}: {flag} has type {type_name!r}; known types: {known} (or empty)")
    cell = row["default"]
    return FlagSpec(
        group=row["group"],
        flag=flag,
        type_name=type_name,
        default=_default(cell, where, flag, computed),
        computed=cell if cell in computed else None,
        required=cell == REQUIRED,
        choices=_choices(row["choices"], types.get(type_name), where, flag),
        nargs=row["nargs"] or None,
        help=row["help"],
    )


def _default(cell: str, where: str, flag: str, computed: Mapping[str, Callable[[], Any]]) -> Any:
    """The JSON value of the cell; NO_DEFAULT when it is empty, ``required`` or the name of a computed default."""
    if not cell or cell == REQUIRED or cell in computed:
        return NO_DEFAULT
    try:
        return json.loads(cell)
    except json.JSONDecodeError:
        names = ", ".join(sorted([REQUIRED, *computed]))
        raise FlagTableError(
            f'{where}: the default of {flag} ({cell!r}) is neither a JSON value (quote strings: "text") '
            f"nor one of: {names}"
        ) from None


def _choices(cell: str, type_function: TypeFunction | None, where: str, flag: str) -> tuple[Any, ...] | None:
    if not cell:
        return None
    convert = type_function or str
    try:
        return tuple(convert(choice) for choice in cell.split())
    except (TypeError, ValueError, argparse.ArgumentTypeError) as e:
        raise FlagTableError(f"{where}: a choice of {flag} does not convert to its type: {e}") from None
