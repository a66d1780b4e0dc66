"""Flags declared as rows of a tab-separated table become exactly the argparse flags they describe.

Each test writes a small table into a temporary folder and reads it with ``read_flag_table``; the last test checks
that the package's own tables ship in the wheel (``setup.py``'s ``package_data``).
"""

from __future__ import annotations

import argparse
import ast
import fnmatch
from pathlib import Path

import pytest

from sample_factory.utils.flag_table import FlagTable, FlagTableError, read_flag_table
from sample_factory.utils.utils import str2bool

HEADER = "group\tflag\ttype\tdefault\tchoices\tnargs\thelp\n"
GROUPS = "group\ttitle\tdescription\nmain\tMain flags\tWhat the test parses.\nempty\tEmpty\t\n"
TYPES = {"int": int, "float": float, "str": str, "str2bool": str2bool}
ROWS = [
    ("main", "--count", "int", "3", "", "", "An int."),
    ("main", "--ratio", "float", "1.0", "", "", "A float written 1.0 stays a float."),
    ("main", "--big", "int", "1e9", "", "", "1e9 is a float default, as in Python source."),
    ("main", "--name", "str", '"plain"', "plain fancy", "", "Choices."),
    ("main", "--flag", "str2bool", "true", "", "", "A boolean."),
    ("main", "--layers", "int", "[64, 64]", "", "*", "A list."),
    ("main", "--maybe", "str", "null", "", "", "None."),
    ("main", "--workers", "int", "machine_size", "", "", "Computed each time."),
    ("main", "--render", "store_true", "", "", "", "A switch."),
    ("other", "--untyped", "", '"x"', "", "", "No type function."),
    ("other", "--must", "", "required", "", "", "Required."),
]


def _write(folder: Path, rows: list[tuple[str, ...]], groups: str | None = GROUPS, header: str = HEADER) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "flags.tsv").write_text(header + "".join("\t".join(row) + "\n" for row in rows))
    if groups is not None:
        (folder / "flag_groups.tsv").write_text(groups)
    return folder


def _table(tmp_path: Path, rows: list[tuple[str, ...]] = ROWS, **computed) -> FlagTable:
    return read_flag_table(_write(tmp_path / "pkg", rows), TYPES, computed or {"machine_size": lambda: 7})


def _main_parser(table: FlagTable) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(add_help=False)
    table.add_group(parser, "main")
    return parser


def test_rows_become_flags_with_their_types_defaults_and_choices(tmp_path):
    cfg = _main_parser(_table(tmp_path)).parse_args([])
    assert vars(cfg) == {
        "count": 3,
        "ratio": 1.0,
        "big": 1e9,
        "name": "plain",
        "flag": True,
        "layers": [64, 64],
        "maybe": None,
        "workers": 7,
        "render": False,
    }
    assert type(cfg.ratio) is float and type(cfg.big) is float and type(cfg.count) is int
    given = _main_parser(_table(tmp_path)).parse_args(["--flag=no", "--layers", "1", "2", "3", "--render"])
    assert (given.flag, given.layers, given.render) == (False, [1, 2, 3], True)
    with pytest.raises(SystemExit):
        _main_parser(_table(tmp_path)).parse_args(["--name=other"])


def test_a_section_gets_its_title_and_description_and_keeps_row_order(tmp_path):
    parser = _main_parser(_table(tmp_path))
    section = parser._action_groups[-1]
    assert (section.title, section.description) == ("Main flags", "What the test parses.")
    assert [action.option_strings[0] for action in section._group_actions] == [row[1] for row in ROWS[:9]]
    empty = _table(tmp_path).add_group(argparse.ArgumentParser(), "empty")
    assert (empty.title, empty.description, empty._group_actions) == ("Empty", None, [])


def test_flags_without_a_section_go_onto_the_parser_itself(tmp_path):
    parser = argparse.ArgumentParser(add_help=False)
    _table(tmp_path).add_flags(parser, "other")
    untyped = next(action for action in parser._actions if action.dest == "untyped")
    assert untyped.type is None and untyped.default == "x"
    with pytest.raises(SystemExit):
        parser.parse_args([])  # --must is required
    assert parser.parse_args(["--must=1"]).must == "1"


def test_computed_defaults_are_computed_for_every_parser(tmp_path):
    calls = []
    table = _table(tmp_path, machine_size=lambda: calls.append(1) or len(calls))
    assert [_main_parser(table).parse_args([]).workers for _ in range(2)] == [1, 2]


def test_list_defaults_are_not_shared_between_parsers(tmp_path):
    table = _table(tmp_path)
    first = _main_parser(table).parse_args([])
    first.layers.append(1)
    assert _main_parser(table).parse_args([]).layers == [64, 64]


def test_unknown_sections_are_errors_that_name_the_fix(tmp_path):
    table = _table(tmp_path)
    with pytest.raises(FlagTableError, match="no flag has group 'missing'"):
        table.add_flags(argparse.ArgumentParser(), "missing")
    with pytest.raises(FlagTableError, match="'other' has no row in flag_groups.tsv"):
        table.add_group(argparse.ArgumentParser(), "other")
    no_groups = read_flag_table(_write(tmp_path / "bare", ROWS[:1], groups=None), TYPES)
    with pytest.raises(FlagTableError, match="has no row in flag_groups.tsv"):
        no_groups.add_group(argparse.ArgumentParser(), "main")


@pytest.mark.parametrize(
    "row, message",
    [
        (("main", "--x", "bool", "true", "", "", "h"), "--x has type 'bool'; known types: float, int, s"),
        (("main", "--x", "str", "plain", "", "", "h"), r"the default of --x \('plain'\) is neither a JSON value"),
        (("main", "x", "int", "1", "", "", "h"), "must be written with its dashes, e.g. --x"),
        (("main", "--x", "int", "1", "1 two", "", "h"), "a choice of --x does not convert to its type"),
        (("main", "--x", "int", "1", "", ""), "expected 7 tab-separated cells"),
        (("main", "--count", "int", "1", "", "", "h"), "--count is declared twice; keep one row"),
    ],
)
def test_bad_rows_fail_when_read_and_name_the_row(tmp_path, row, message):
    with pytest.raises(FlagTableError, match=message) as error:
        _table(tmp_path, [ROWS[0], row])
    assert "flags.tsv" in str(error.value)


def test_a_wrong_header_is_refused(tmp_path):
    with pytest.raises(FlagTableError, match="the header must be the tab-separated columns"):
        read_flag_table(_write(tmp_path / "pkg", ROWS, header="flag\ttype\n"), TYPES)


def test_the_package_tables_ship_in_the_wheel():
    root = Path(__file__).resolve().parents[2]
    setup_call = next(
        node for node in ast.walk(ast.parse((root / "setup.py").read_text())) if isinstance(node, ast.Call)
    )
    package_data = ast.literal_eval(next(kw.value for kw in setup_call.keywords if kw.arg == "package_data"))
    tables = sorted((root / "sample_factory").rglob("*.tsv"))
    assert tables, "the package has flag tables"
    for table in tables:
        package = ".".join(table.parent.relative_to(root).parts)
        patterns = package_data.get(package, [])
        assert any(fnmatch.fnmatch(table.name, pattern) for pattern in patterns), f"{table} is not in package_data"
