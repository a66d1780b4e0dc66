"""The zoo's page, made from its records: a row per task and seed, the superseded records, and learning-curve plots.

A record is *current* when it trained the task the zoo defines now (for MuJoCo: the Gymnasium task version its
command names; a command that names none ran the v5 tasks, the family's default before ``--mujoco_version``
existed). The latest current record of each task and seed is a row of the main table; every other record stays on
the page in the table of earlier records, so a first result is never lost. The plots are SVG text written by this
module (no plotting library), so regenerating them from the same records gives the same bytes.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from zoo_tasks import TASKS, ZooTask

Record = dict[str, Any]
IMG_DIR = "docs/img/zoo"  # where the plots go, relative to the repository; the page links them as img/zoo/<task>.svg
MUJOCO_MODULE = "sf_examples.mujoco.train_mujoco"
MUJOCO_VERSION_FLAG = "mujoco_version"
MUJOCO_UNNAMED_VERSION = "v5"  # what the MuJoCo family made before the flag existed
# MuJoCo records written before this time (commit f58a860) bootstrapped a truncated episode from the value of the next
# episode's start state; their record cell carries EARLIER_BOOTSTRAP_MARK, explained under the table
NEXT_ROW_BOOTSTRAP_UNTIL = "2026-11-29T04:39:39+00:00"
EARLIER_BOOTSTRAP_MARK = " †"
# records written before this time (commit 82cd0f9) came from runs whose rollout workers started all their envs at
# once (no --decorrelate_envs_on_one_worker steps): their record cell carries ENVS_TOGETHER_MARK; in the seed-spread
# table such runs of this package form a group of their own
ENVS_STARTED_TOGETHER_UNTIL = "2026-11-29T18:26:15+00:00"
ENVS_TOGETHER_MARK = " ‡"
# records of this package written before this time (commit f61f393) whose run had a KL penalty (--kl_loss_coeff, set
# by the MuJoCo family) penalised KL(behaviour || current) instead of KL(current || behaviour): their record cell
# carries BEHAVIOUR_FIRST_KL_MARK; in the seed-spread table such runs form a group of their own
BEHAVIOUR_FIRST_KL_UNTIL = "2026-12-08T01:04:13+00:00"
BEHAVIOUR_FIRST_KL_MARK = " §"


def flag_value(command: str, flag: str) -> str | None:
    """The value a command gives ``--flag=`` (the last one, as argparse takes it); None where it names none."""
    prefix = f"--{flag}="
    named = [word[len(prefix) :] for word in command.split() if word.startswith(prefix)]
    return named[-1] if named else None


def envs_per_worker(task: ZooTask, command: str) -> int:
    """The envs each rollout worker of a record's run stepped: its command's ``--num_envs_per_worker``, else the
    default of the task's family."""
    named = flag_value(command, "num_envs_per_worker")
    return int(named if named is not None else task.default_of("num_envs_per_worker"))


def envs_started_together(record: Record, task: ZooTask | None = None) -> bool:
    """True for a record of this package made when a worker's envs all started their first episode together; never
    for a run whose workers each stepped one env (Atari's family default), which trains the same either way."""
    if task is not None and envs_per_worker(task, record["command"]) == 1:
        return False
    return record["date"] < ENVS_STARTED_TOGETHER_UNTIL


def behaviour_first_kl(record: Record, task: ZooTask) -> bool:
    """True for a record of this package whose run penalised KL(behaviour || current): made before the learner turned
    the KL penalty around, with a non-zero ``--kl_loss_coeff`` (its command's, else its family's default)."""
    if record["date"] >= BEHAVIOUR_FIRST_KL_UNTIL:
        return False
    named = flag_value(record.get("command", ""), "kl_loss_coeff")
    return float(named if named is not None else task.default_of("kl_loss_coeff")) != 0.0


def task_variant(task: ZooTask, command: str) -> str:
    """The MuJoCo task version a command trained ('v4', 'v5'); '' for other families."""
    if task.train_module != MUJOCO_MODULE:
        return ""
    named = flag_value(command, MUJOCO_VERSION_FLAG)
    return MUJOCO_UNNAMED_VERSION if named is None else named


def next_row_bootstrap(task: ZooTask, record: Record) -> bool:
    """True for a MuJoCo record trained when a truncation was bootstrapped from the next row's value (the family sets
    ``--value_bootstrap=True``; the other families of the zoo do not bootstrap truncations)."""
    return task.train_module == MUJOCO_MODULE and record["date"] < NEXT_ROW_BOOTSTRAP_UNTIL


def _zoo_variant(task: ZooTask) -> str:
    """The task version the zoo trains now (its command's flags say it)."""
    return task_variant(task, " ".join(task.extra_flags))


def split_records(records: list[Record]) -> tuple[dict[str, dict[int, Record]], list[Record]]:
    """({task: {seed: its latest current record}}, every other zoo record in the order written)."""
    current: dict[str, dict[int, Record]] = {}
    for record in records:
        task = TASKS.get(record.get("workload", "")) if record.get("kind") == "zoo" else None
        if task is not None and task_variant(task, record["command"]) == _zoo_variant(task):
            current.setdefault(record["workload"], {})[record["figures"]["seed"]] = record
    kept = {id(r) for seeds in current.values() for r in seeds.values()}
    earlier = [r for r in records if r.get("kind") == "zoo" and id(r) not in kept]
    return {name: dict(sorted(seeds.items())) for name, seeds in current.items()}, earlier


def _num(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds / 60:.1f} min" if seconds < 3600 else f"{seconds / 3600:.2f} h"


def _published(task: ZooTask) -> str:
    if task.target is not None:
        return f"target ≥ {task.target:g}"
    return "n/a" if task.published_mean is None else f"{task.published_mean:g} ± {task.published_std:g}"


def _verdict(task: ZooTask, score: float | None) -> str:
    passed = None if score is None else task.passes(score)
    return "n/a" if passed is None else ("yes" if passed else "no")


def _score(figures: dict[str, Any]) -> str:
    if figures.get("score_mean") is None:
        return "n/a"
    return f"{figures['score_mean']:.2f} ± {figures['score_std']:.2f}"


def _row_cells(task: ZooTask, record: Record) -> list[str]:
    f = record["figures"]
    verdict = f"{_verdict(task, f.get('score_mean'))} / {_verdict(task, f.get('best_checkpoint_score_mean'))}"
    trained = f"{f['env_steps']:,}" + ("" if f.get("complete") else " (partial)")
    machine = f"{record['machine']['cores']} cores, GPU: {record['machine']['gpu']}"
    made = f"{record['date'][:10]}, `{record['commit']}`"
    if next_row_bootstrap(task, record):
        made += EARLIER_BOOTSTRAP_MARK
    if envs_started_together(record, task):
        made += ENVS_TOGETHER_MARK
    if behaviour_first_kl(record, task):
        made += BEHAVIOUR_FIRST_KL_MARK
    return [
        _score(f), _num(f.get("best_checkpoint_score_mean"), 2), verdict, trained, _duration(f.get("train_wall_s")),
        _duration(f.get("time_to_90_s")), machine, made,
    ]  # fmt: skip


def zoo_table(records: list[Record]) -> str:
    """The main table: each task's current records, a row per seed (a task with none: 'not trained yet', or why it
    cannot be)."""
    current, _ = split_records(records)
    lines = [
        "| task | seed | budget | published | ours: final policy (10 episodes) | ours: best checkpoint | "
        "≥ published − 1 std (final / best) | trained | training time | time to 90 % | machine | record |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, task in TASKS.items():
        seeds = current.get(name, {})
        rows = [[str(seed), *_row_cells(task, record)] for seed, record in seeds.items()]
        untrained = f"cannot be trained here: {task.unavailable}" if task.unavailable else "not trained yet"
        for cells in rows or [["", untrained, *[""] * 7]]:
            lines.append("| " + " | ".join([name, cells[0], f"{task.budget:,}", _published(task), *cells[1:]]) + " |")
    return "\n".join(lines)


def earlier_table(records: list[Record]) -> str:
    """Every zoo record the main table does not show, oldest first, with the task version it trained."""
    _, earlier = split_records(records)
    if not earlier:
        return "None yet."
    lines = [
        "| task | tasks | seed | final policy (10 episodes) | best checkpoint | ≥ published − 1 std (final / best) | "
        "trained | training time | time to 90 % | machine | record |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for record in earlier:
        task = TASKS.get(record["workload"])
        if task is None:
            continue
        variant = task_variant(task, record["command"]) or "n/a"
        lines.append(f"| {record['workload']} | {variant} | {record['figures']['seed']} | "
                     + " | ".join(_row_cells(task, record)) + " |")  # fmt: skip
    return "\n".join(lines)


def references(records: list[Record]) -> dict[str, dict[int, Record]]:
    """{task: {seed: its latest zoo_reference record}} (bench/zoo_reference.py: the release on the same task)."""
    found: dict[str, dict[int, Record]] = {}
    for record in records:
        if record.get("kind") == "zoo_reference" and record.get("workload") in TASKS:
            found.setdefault(record["workload"], {})[record["figures"]["seed"]] = record
    return found


def window_mean(points: list[tuple[float, float]], low: float, high: float) -> float | None:
    inside = [reward for steps, reward in points if low <= steps <= high]
    return sum(inside) / len(inside) if inside else None


def _final_scores(reference: Record, ours: Record | None) -> tuple[str, str]:
    """The two final policies' evaluation scores (and the best checkpoints'), where the release was evaluated; ours only
    where the release was not stopped before the budget (stopped early, its final policy is not at the point of ours;
    a run to the budget may print its last summary a few thousand steps before it)."""
    figures = reference["figures"]
    if figures.get("score_mean") is None:
        return "n/a", "n/a"
    theirs = _final_and_best(figures)
    stopped_early = figures.get("stop_at", figures["env_steps"]) < figures.get("budget", float("inf"))
    if ours is None or stopped_early:
        return theirs, "n/a"
    return theirs, _final_and_best(ours["figures"])


def _final_and_best(figures: dict) -> str:
    best = figures.get("best_checkpoint_score_mean")
    final = f"{_num(figures['score_mean'])} ± {_num(figures.get('score_std'))}"
    return final if best is None else f"{final}; best checkpoint {_num(best)}"


def reference_table(records: list[Record]) -> str:
    """The release against the zoo's run of the same task and seed: mean training reward over the last third of the
    release's steps (the same steps of both runs, so the same point of a budget-long schedule), and, where the release
    was evaluated, both final policies' evaluation scores."""
    current, _ = split_records(records)
    lines = [
        "| task | seed | env steps compared | Sample Factory 2.1.1 | ours | ours − Sample Factory 2.1.1 "
        "| final policy, Sample Factory 2.1.1 | final policy, ours | record |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, seeds in references(records).items():
        for seed, reference in sorted(seeds.items()):
            stop = reference["figures"]["env_steps"]
            low = stop * 2 / 3
            theirs = window_mean([(p[0], p[1]) for p in reference["figures"]["curve"]], low, stop)
            ours_record = current.get(name, {}).get(seed)
            ours = None
            if ours_record is not None:
                ours = window_mean([(p[0], p[2]) for p in ours_record["figures"].get("curve") or []], low, stop)
            difference = None if ours is None or theirs is None else ours - theirs
            final_theirs, final_ours = _final_scores(reference, ours_record)
            lines.append(
                f"| {name} | {seed} | {low / 1e6:.1f}M-{stop / 1e6:.1f}M | {_num(theirs, 2)} | {_num(ours, 2)} | "
                f"{_num(difference, 2)} | {final_theirs} | {final_ours} | {reference['date'][:10]}, "
                f"`{reference['commit']}` |"
            )
    return "\n".join(lines) if len(lines) > 2 else "None yet."


OURS_ENVS_TOGETHER = "ours, envs started together"
SPREAD_NAMES = {"ours": "ours", "sf2_2.1.1": "Sample Factory 2.1.1", OURS_ENVS_TOGETHER: OURS_ENVS_TOGETHER + " ‡"}


def spread_group(record: Record) -> str:
    """The group a seed_spread record's run belongs to: its implementation; this package's runs made with an earlier
    learning path (‡, §) are groups of their own, named with their marks."""
    implementation = record["figures"]["implementation"]
    if implementation != "ours":
        return implementation
    group = OURS_ENVS_TOGETHER if envs_started_together(record) else "ours"
    return group + (BEHAVIOUR_FIRST_KL_MARK if behaviour_first_kl(record, TASKS[record["workload"]]) else "")


def spread_runs(records: list[Record]) -> dict[tuple[str, int], dict[str, dict[int, Record]]]:
    """{(task, stop_at): {group: {seed: its latest seed_spread record}}} (bench/seed_spread.py, ``spread_group``)."""
    found: dict[tuple[str, int], dict[str, dict[int, Record]]] = {}
    for record in records:
        if record.get("kind") != "seed_spread" or record.get("workload") not in TASKS:
            continue
        figures = record["figures"]
        group = found.setdefault((record["workload"], figures["stop_at"]), {})
        group.setdefault(spread_group(record), {})[figures["seed"]] = record
    return found


def spread_name(group: str) -> str:
    """How the seed-spread table names a group: ``ours §`` stays, ``ours, envs started together §`` gains its ‡."""
    base = group.removesuffix(BEHAVIOUR_FIRST_KL_MARK)
    return SPREAD_NAMES.get(base, base) + group[len(base) :]


def reward_at_step(curve: list[list[float]], steps: int) -> float:
    """The reward of a curve's first point at or past ``steps`` (its last point if none is): runs stopped by polling
    their summaries overshoot the step by different amounts, so each is read at the same step."""
    return next((point[-1] for point in curve if point[0] >= steps), curve[-1][-1])


def spread_table(records: list[Record]) -> str:
    """Each implementation's training reward at the same early step, seed by seed, and its median: whether one of
    them leaves a task's slow path less often than the other."""
    lines = [
        "| task | stopped at (env steps) | implementation | seeds | average training reward, seed by seed | median "
        "| record |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for (name, stop_at), implementations in spread_runs(records).items():
        for implementation, seeds in sorted(implementations.items()):
            ordered = sorted(seeds.items())
            by_seed = {seed: reward_at_step(record["figures"]["curve"], stop_at) for seed, record in ordered}
            rewards = list(by_seed.values())
            latest = max((record for _, record in ordered), key=lambda r: r["date"])
            lines.append(
                f"| {name} | {stop_at:,} | {spread_name(implementation)} | {len(ordered)} | "
                f"{', '.join(f'{seed}: {_num(reward, 0)}' for seed, reward in by_seed.items())} | "
                f"{_num(statistics.median(rewards), 0)} | {latest['date'][:10]}, `{latest['commit']}` |"
            )
    return "\n".join(lines) if len(lines) > 2 else "None yet."


def curves_section(records: list[Record]) -> str:
    """Markdown that shows each task's plot (tasks without a current record have none)."""
    current, _ = split_records(records)
    parts = [f"**{name}**\n\n![{name}: average episode reward against env steps](img/zoo/{name}.svg)"
             for name in TASKS if name in current]  # fmt: skip
    return "\n\n".join(parts) if parts else "No curves yet."


def plots(records: list[Record]) -> dict[str, str]:
    """{path relative to the repository: SVG text} for every task with a current record."""
    current, _ = split_records(records)
    refs = references(records)
    return {
        f"{IMG_DIR}/{name}.svg": curve_svg(name, TASKS[name], seeds, refs.get(name, {}))
        for name, seeds in current.items()
    }


# --- the plot --------------------------------------------------------------------------------------------------------

WIDTH, HEIGHT = 560, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 28, 40
REFERENCE_COLOUR = "#888888"
SEED_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high]: steps of 1, 2 or 5 times a power of ten."""
    if high <= low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    ticks = [round(math.floor(low / step) * step, 10)]
    while ticks[-1] < high:
        ticks.append(round(ticks[0] + len(ticks) * step, 10))
    return ticks


def _label(value: float) -> str:
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:g}M"
    if magnitude >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


def curve_svg(
    name: str, task: ZooTask, seeds: dict[int, Record], reference_runs: dict[int, Record] | None = None
) -> str:
    """The average episode reward of each seed's run against env steps, with the published score as a dashed line
    and the release's runs of the same task (bench/zoo_reference.py) in grey."""
    curves = {f"seed {seed}": [(p[0], p[2]) for p in r["figures"].get("curve") or []] for seed, r in seeds.items()}
    for seed, r in sorted((reference_runs or {}).items()):
        curves[f"Sample Factory 2.1.1, seed {seed}"] = [(p[0], p[1]) for p in r["figures"]["curve"]]
    reference = task.target if task.target is not None else task.published_mean
    xs = [x for points in curves.values() for x, _ in points] or [task.budget]
    ys = [y for points in curves.values() for _, y in points] + ([reference] if reference is not None else [])
    x_range = (0.0, float(max(max(xs), 1)))  # the axis ends where the runs end; its ticks are the round values inside
    x_ticks = [tick for tick in nice_ticks(*x_range) if tick <= x_range[1]]
    y_ticks = nice_ticks(min(ys or [0.0]), max(ys or [1.0]))
    y_range = (y_ticks[0], y_ticks[-1])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> str:
        return f"{LEFT + (x - x_range[0]) / (x_range[1] - x_range[0]) * plot_w:.1f}"

    def py(y: float) -> str:
        return f"{TOP + plot_h - (y - y_range[0]) / (y_range[1] - y_range[0]) * plot_h:.1f}"

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
        'font-family="sans-serif" font-size="11">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="16" font-size="13">{name}: average episode reward against env steps</text>',
    ]
    for tick in x_ticks:
        out.append(f'<line x1="{px(tick)}" y1="{TOP}" x2="{px(tick)}" y2="{TOP + plot_h}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{px(tick)}" y="{TOP + plot_h + 14}" text-anchor="middle">{_label(tick)}</text>')
    for tick in y_ticks:
        out.append(f'<line x1="{LEFT}" y1="{py(tick)}" x2="{LEFT + plot_w}" y2="{py(tick)}" stroke="#e0e0e0"/>')
        out.append(f'<text x="{LEFT - 6}" y="{py(tick)}" text-anchor="end" dy="4">{_label(tick)}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" text-anchor="middle">env steps</text>')
    if reference is not None:
        word = "target" if task.target is not None else "published"
        out.append(f'<line x1="{LEFT}" y1="{py(reference)}" x2="{LEFT + plot_w}" y2="{py(reference)}" '
                   'stroke="#555" stroke-dasharray="6 4"/>')  # fmt: skip
        below = float(py(reference)) - TOP < 14  # a line at the top of the plot: its label goes under it
        dy = "12" if below else "-4"
        out.append(f'<text x="{LEFT + plot_w - 4}" y="{py(reference)}" text-anchor="end" dy="{dy}">{word}</text>')
    for index, (label, points) in enumerate(curves.items()):
        colour = REFERENCE_COLOUR if label.startswith("Sample") else SEED_COLOURS[index % len(SEED_COLOURS)]
        path = " ".join(f"{px(x)},{py(y)}" for x, y in points)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        out.append(f'<text x="{LEFT + 8}" y="{TOP + 14 + 14 * index}" fill="{colour}">{label}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def readme_sentence(records: list[Record]) -> str:
    """One sentence for the README: how many tasks with a published score are trained, and how many reach it."""
    current, _ = split_records(records)
    scored = [name for name, task in TASKS.items() if task.published_mean is not None or task.target is not None]
    runs = [(TASKS[name], r["figures"]) for name in scored for r in current.get(name, {}).values()]
    tasks = sum(1 for name in scored if name in current)
    if not runs:
        return "No zoo task is trained yet ([docs/zoo.md](docs/zoo.md))."
    final = sum(1 for task, f in runs if f.get("score_mean") is not None and task.passes(f["score_mean"]))
    best = sum(1 for task, f in runs if f.get("best_checkpoint_score_mean") is not None
               and task.passes(f["best_checkpoint_score_mean"]))  # fmt: skip
    return (
        f"Trained to Sample Factory 2's published budgets: {tasks} of the zoo's {len(scored)} tasks with a published "
        f"score or a target, {len(runs)} runs; the final policy of {final} and the best checkpoint of {best} of "
        "those runs score at least the published mean less one standard deviation (or the target) "
        "([docs/zoo.md](docs/zoo.md), 10 evaluation episodes each)."
    )
