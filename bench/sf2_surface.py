"""How much of Sample Factory 2's public surface this package has at SF2's module paths.

Reads ``bench/data/sf2_public_surface.tsv`` (one row per public top-level function or class of SF2 2.1.1 and of its
main branch: release, module, name, kind, leading parameter names) and checks each name here: importable from the same
module, a class where SF2 has a class, and taking SF2's leading parameters by name in SF2's order (a class through its
constructor). Where 2.1.1 and main list different parameters for one name, both lists must be accepted.

python bench/sf2_surface.py            # the count and one line per missing name
python bench/sf2_surface.py --quiet    # the count only
python bench/sf2_surface.py --module sample_factory.utils   # rows whose module starts with this
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import io
import sys
from collections import defaultdict
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

SURFACE_TSV = Path(__file__).resolve().parent / "data" / "sf2_public_surface.tsv"


@dataclass(frozen=True)
class SurfaceName:
    """One public name of SF2 with every parameter list its releases give it."""

    module: str
    name: str
    kind: str
    parameter_lists: tuple[tuple[str, ...], ...]


def read_surface(path: Path = SURFACE_TSV) -> list[SurfaceName]:
    rows: dict[tuple[str, str], list[tuple[str, tuple[str, ...]]]] = defaultdict(list)
    with open(path, encoding="utf-8") as table:
        next(table)
        for line in table:
            _release, module, name, kind, params = line.rstrip("\n").split("\t")
            rows[(module, name)].append((kind, tuple(p for p in params.split(",") if p)))
    return [
        SurfaceName(module, name, entries[0][0], tuple(sorted({p for _, p in entries})))
        for (module, name), entries in sorted(rows.items())
    ]


def _parameter_names(obj: object) -> list[str] | None:
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    names = []
    for param in signature.parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            break
        names.append(param.name)
    if inspect.isclass(obj) and names[:1] == ["self"]:
        names = names[1:]
    return names


def accepts_leading(obj: object, expected: tuple[str, ...]) -> bool:
    if not expected:
        return True
    names = _parameter_names(obj)
    return names is not None and tuple(names[: len(expected)]) == expected


def check(entry: SurfaceName) -> str | None:
    """None when the name is present as SF2 has it, else why not."""
    try:
        with redirect_stdout(io.StringIO()), redirect_stderr(io.StringIO()):
            module = importlib.import_module(entry.module)
    except ImportError as exc:
        return f"module does not import: {type(exc).__name__}: {exc}".splitlines()[0][:160]
    except Exception as exc:  # noqa: BLE001 - a module that fails to import for any reason is missing
        return f"module raises on import: {type(exc).__name__}: {exc}".splitlines()[0][:160]
    if not hasattr(module, entry.name):
        return "name missing"
    obj = getattr(module, entry.name)
    if entry.kind == "class" and not inspect.isclass(obj):
        return "not a class"
    if entry.kind == "function" and not callable(obj):
        return "not callable"
    for expected in entry.parameter_lists:
        if not accepts_leading(obj, expected):
            return f"parameters {_parameter_names(obj)} do not start with {list(expected)}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quiet", action="store_true", help="print the count only")
    parser.add_argument("--module", default="", help="check only the rows whose module starts with this")
    args = parser.parse_args(argv)
    entries = [e for e in read_surface() if e.module.startswith(args.module)]
    missing = [(e, why) for e in entries if (why := check(e)) is not None]
    if not args.quiet:
        for entry, why in missing:
            print(f"MISSING {entry.module}.{entry.name}: {why}")
    present = len(entries) - len(missing)
    share = 100 * present / len(entries)
    print(f"{present} of {len(entries)} public names of Sample Factory 2 present ({share:.1f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
