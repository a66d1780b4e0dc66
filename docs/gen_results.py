"""Generate the results pages of the docs from the records under bench/results/ (see bench/records.py).

    python docs/gen_results.py            # write docs/benchmarks.md (and docs/zoo.md)
    python docs/gen_results.py --check    # exit 1 when a page differs from what the records give

The prose of each page lives in bench/templates/; this script fills its ``{{...}}`` slots with tables made from the
records, so a figure on a page is always one that a record holds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "bench"))

import records as rec  # noqa: E402
import zoo_report  # noqa: E402

TEMPLATES = REPO_ROOT / "bench" / "templates"
RECORDS = REPO_ROOT / "bench" / "results"  # the repository's records, whatever SF_BENCH_RESULTS_DIR says
Record = dict[str, Any]


def _median(values: Sequence[float | None]) -> float | None:
    measured = [v for v in values if v is not None]
    return statistics.median(measured) if measured else None


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if digits == 0 else f"{value:.{digits}f}"


def _reward(side: dict[str, Any]) -> str:
    text = _num(side.get("reward"), 3 if abs(side.get("reward") or 0) < 10 else 1)
    return text + (f" (game {side['score']:.2f})" if side.get("score") is not None else "")


def group_sets(records: list[Record]) -> dict[str, list[Record]]:
    """Records by set id, sets in the order their first record was written."""
    sets: dict[str, list[Record]] = {}
    for record in records:
        sets.setdefault(record["set"], []).append(record)
    return sets


def _set_label(first: Record) -> str:
    return f"{first['date'][:10]}, `{first['commit']}`"


def _machine_line(first: Record) -> str:
    m, v = first["machine"], first.get("versions", {})
    memory = f", {m['memory_gib']:g} GiB" if m.get("memory_gib") else ""
    packages = ", ".join(f"{name} {v[name]}" for name in ("python", "torch", "gymnasium", "numpy") if name in v)
    return f"{m['cpu']}, {m['cores']} logical cores{memory}, GPU: {m['gpu']}; {packages}"


def compare_medians(pairs: list[Record]) -> dict[str, Any]:
    """A set's figures for one workload: medians over its pairs, or the medians a ``compare_sf2_set`` record keeps."""
    if pairs[0]["kind"] == "compare_sf2_set":
        f = pairs[0]["figures"]
        return {"pairs": f["pairs"], "fps_ratio": f["fps_ratio"], "whole_ratio": f["steps_per_s_ratio"],
                "ours": f["ours"], "reference": f["reference"]}  # fmt: skip
    figures = [p["figures"] for p in pairs]

    def side(name: str) -> dict[str, Any]:
        return {key: _median([f[name].get(key) for f in figures]) for key in ("fps", "reward", "score")}

    return {
        "pairs": len(figures),
        "fps_ratio": _median([f.get("fps_ratio") for f in figures]),
        "whole_ratio": _median([f.get("steps_per_s_ratio") for f in figures]),
        "ours": side("ours"),
        "reference": side("reference"),
    }


def compare_sections(records: list[Record]) -> tuple[str, str]:
    """(current results, older results) of the Sample Factory 2.1.1 comparison."""
    compare = [r for r in records if r["kind"] in ("compare_sf2", "compare_sf2_set")]
    by_set = group_sets(compare)
    rows: list[tuple[str, str, list[Record]]] = []  # (set, workload, records), in the order written
    for set_id, members in by_set.items():
        workloads: dict[str, list[Record]] = {}
        for record in members:
            workloads.setdefault(record["workload"], []).append(record)
        rows.extend((set_id, workload, items) for workload, items in workloads.items())
    current: dict[str, tuple[str, list[Record]]] = {}
    for set_id, workload, items in rows:
        if items[0]["kind"] == "compare_sf2":
            current[workload] = (set_id, items)
    current_keys = {(set_id, w) for w, (set_id, _) in current.items()}
    return _current_compare(current), _older_compare([r for r in rows if (r[0], r[1]) not in current_keys])


def _current_compare(current: dict[str, tuple[str, list[Record]]]) -> str:
    if not current:
        return "No comparison has been recorded yet: run `make bench`."
    summary = [
        "| workload | set | pairs | reported-FPS ratio | whole-process ratio | reward: this repository | "
        "Sample Factory 2.1.1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    detail = [
        "| workload | pair (seed) | this repository: FPS | wall s | reward | Sample Factory 2.1.1: FPS | wall s | "
        "reward | FPS ratio | whole-process ratio |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    commands: dict[str, Record] = {}
    for workload, (set_id, items) in current.items():
        m = compare_medians(items)
        summary.append(
            f"| {workload} | {_set_label(items[0])} | {m['pairs']} | **{_num(m['fps_ratio'])}** | "
            f"**{_num(m['whole_ratio'])}** | {_reward(m['ours'])} | {_reward(m['reference'])} |"
        )
        for record in items:
            f = record["figures"]
            o, r = f["ours"], f["reference"]
            detail.append(
                f"| {workload} | {f['pair']} ({f['seed']}) | {_num(o['fps'], 0)} | {_num(o['wall_s'], 1)} | "
                f"{_reward(o)} | {_num(r['fps'], 0)} | {_num(r['wall_s'], 1)} | {_reward(r)} | "
                f"{_num(f.get('fps_ratio'))} | {_num(f.get('steps_per_s_ratio'))} |"
            )
        commands.setdefault(set_id, items[0])
    lines = [f"Machine of these sets: {_machine_line(next(iter(commands.values())))}.", "", *summary, "", *detail, ""]
    lines.append("Sets:")
    for first in commands.values():
        load = first.get("load_average")
        load_text = f" (load average {load[0]:.1f} when the set ended)" if load else ""
        lines.append(f"- {_set_label(first)}{load_text}: `{first['command']}`")
    return "\n".join(lines)


def _older_compare(rows: list[tuple[str, str, list[Record]]]) -> str:
    if not rows:
        return "No older comparison is recorded."
    lines = [
        "| set | workload | pairs | reported-FPS ratio | whole-process ratio | reward: this repository | "
        "Sample Factory 2.1.1 |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    set_order = list(dict.fromkeys(set_id for set_id, _, _ in rows))
    newest_first = sorted(rows, key=lambda row: -set_order.index(row[0]))  # stable: workloads keep their order
    for _set_id, workload, items in newest_first:
        m = compare_medians(items)
        lines.append(
            f"| {_set_label(items[0])} | {workload} | {m['pairs']} | {_num(m['fps_ratio'])} | "
            f"{_num(m['whole_ratio'])} | {_reward(m['ours'])} | {_reward(m['reference'])} |"
        )
    return "\n".join(lines)


def _startup_table(items: list[Record]) -> list[str]:
    lines = [
        "| workload | variant | runs | to first frame, s | after last frame, s | whole process, s |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for record in items:
        f = record["figures"]
        variant = f["variant"] + (f" (`{f['variant_commit']}`)" if f.get("variant_commit") else "")
        lines.append(
            f"| {record['workload']} | {variant} | {f['runs']} | {_num(f['to_first_frame_s'], 1)} | "
            f"{_num(f['after_last_frame_s'], 1)} | {_num(f['whole_s'], 1)} |"
        )
    return lines


def startup_sections(records: list[Record]) -> tuple[str, str]:
    sets = list(group_sets([r for r in records if r["kind"] == "startup"]).values())
    if not sets:
        return "No start-up comparison has been recorded yet.", ""
    current = sets[-1]
    text = [f"{_set_label(current[0])}: `{current[0]['command']}`", "", *_startup_table(current)]
    older = []
    for items in reversed(sets[:-1]):
        older.extend(["", f"Start-up, {_set_label(items[0])}: `{items[0]['command']}`", "", *_startup_table(items)])
    return "\n".join(text), "\n".join(older).strip()


def fast_path_section(records: list[Record]) -> str:
    """The newest set of each (compat module, workload): medians of the per-pair ratios with the private paths on
    and off."""
    newest: dict[tuple[str, str], list[Record]] = {}
    for items in group_sets([r for r in records if r["kind"] == "fast_path_ab"]).values():
        newest[(items[0]["figures"]["module"], items[0]["workload"])] = items
    if not newest:
        return "No private-path comparison has been recorded yet."
    lines = [
        "| module | workload | pairs | FPS on / off | whole process off / on | FPS on, off (medians) | set |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (module, workload), items in sorted(newest.items()):
        figures = [r["figures"] for r in items]
        fps = _median([f["fps_ratio"] for f in figures])
        wall = _median([f["wall_ratio"] for f in figures])
        on, off = _median([f["on"]["fps"] for f in figures]), _median([f["off"]["fps"] for f in figures])
        spread = ", ".join(_num(f["fps_ratio"], 3) for f in figures)
        lines.append(
            f"| `{module}` | {workload} | {len(items)} | {_num(fps, 3)} ({spread}) | {_num(wall, 3)} | "
            f"{_num(on, 0)}, {_num(off, 0)} | {_set_label(items[0])} |"
        )
    return "\n".join(lines)


def fill(template: str, slots: dict[str, str]) -> str:
    for key, value in slots.items():
        template = template.replace("{{" + key + "}}", value)
    return template.rstrip() + "\n"


def benchmarks_page(records: list[Record]) -> str:
    current_compare, older_compare = compare_sections(records)
    current_startup, older_startup = startup_sections(records)
    slots = {
        "current_compare": current_compare,
        "older_compare": older_compare,
        "current_startup": current_startup,
        "older_startup": older_startup,
        "fast_path_ab": fast_path_section(records),
    }
    return fill((TEMPLATES / "benchmarks.md").read_text(encoding="utf-8"), slots)


def zoo_page(records: list[Record]) -> str:
    slots = {
        "zoo_table": zoo_report.zoo_table(records),
        "zoo_curves": zoo_report.curves_section(records),
        "zoo_earlier": zoo_report.earlier_table(records),
        "zoo_reference": zoo_report.reference_table(records),
        "zoo_seed_spread": zoo_report.spread_table(records),
    }
    return fill((TEMPLATES / "zoo.md").read_text(encoding="utf-8"), slots)


README_START = "<!-- results:start (generated from bench/results/ by docs/gen_results.py) -->"
README_END = "<!-- results:end -->"


def readme_sentence(records: list[Record]) -> str:
    """The README's one sentence of figures: the median FPS ratio of each workload's current set."""
    compare = [r for r in records if r["kind"] == "compare_sf2"]
    current: dict[str, list[Record]] = {}
    for members in group_sets(compare).values():
        for workload in dict.fromkeys(r["workload"] for r in members):
            current[workload] = [r for r in members if r["workload"] == workload]
    ratios = [f"{_num(compare_medians(items)['fps_ratio'])}x" for items in current.values()]
    if not ratios:
        return "No comparison with Sample Factory 2.1.1 is recorded yet ([docs/benchmarks.md](docs/benchmarks.md))."
    named = [f"{ratio} on {workload}" for ratio, workload in zip(ratios, current, strict=True)]
    first, rest = named[0].replace(" on ", " Sample Factory 2.1.1's frames per second on ", 1), named[1:]
    listed = ", ".join([first, *rest[:-1]]) + (f" and {rest[-1]}" if rest else "")
    return (
        f"Same flags, same machine, alternating runs, current set of each workload: {listed} "
        "([docs/benchmarks.md](docs/benchmarks.md))."
    )


def readme(records: list[Record]) -> str:
    text = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    start, end = text.index(README_START) + len(README_START), text.index(README_END)
    sentences = f"{readme_sentence(records)} {zoo_report.readme_sentence(records)}"
    return text[:start] + "\n" + wrap(sentences) + "\n" + text[end:]


def wrap(text: str, width: int = 120) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


PAGES: dict[str, Callable[[list[Record]], str]] = {
    "docs/benchmarks.md": benchmarks_page,
    "docs/zoo.md": zoo_page,
    "README.md": readme,
}


def generated(records: list[Record]) -> dict[str, str]:
    """{path relative to the repository: its text} for every generated file: the pages and the zoo's plots."""
    files = {relative: make_page(records) for relative, make_page in PAGES.items()}
    files.update(zoo_report.plots(records))
    return files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare the pages with the records, write nothing")
    args = parser.parse_args(argv)
    records = rec.load(results_dir=RECORDS)
    files = generated(records)
    stale = []
    for leftover in sorted((REPO_ROOT / zoo_report.IMG_DIR).glob("*.svg")):
        relative = str(leftover.relative_to(REPO_ROOT))
        if relative not in files:  # the plot of a task that has no current record any more
            stale.append(relative) if args.check else leftover.unlink()
    for relative, page in files.items():
        path = REPO_ROOT / relative
        if args.check:
            if not path.exists() or path.read_text(encoding="utf-8") != page:
                stale.append(relative)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(page, encoding="utf-8")
    if stale:
        print(f"out of date with bench/results/: {', '.join(stale)}; run `python docs/gen_results.py`")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
