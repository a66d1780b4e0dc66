"""The model card (README.md) of a shared agent: Hub metadata, results, replay, commands, configuration, files.

The text is built only from what the upload contains and what the experiment recorded, so a reader can check
every number: training rewards name their source file, the evaluation names its episode count, the flag table
lists the saved values and the defaults they replace. The YAML header uses the Hub's ``model-index`` fields so the
Hub shows the reward and files the model under the ``sample-factory`` library.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from sample_factory.huggingface.card_facts import Evaluation, FlagChange, Scripts
from sample_factory.huggingface.experiment_reader import ExperimentSummary

LIBRARY_NAME = "sample-factory"
TAGS = ("deep-reinforcement-learning", "reinforcement-learning", "sample-factory")
DEFAULT_TRAIN_DIR = "./train_dir"


@dataclass
class CardInputs:
    """Everything the card states; ``video`` is the replay's path inside the repository (None: no replay)."""

    repo_id: str
    summary: ExperimentSummary
    scripts: Scripts
    flag_changes: list[FlagChange] = field(default_factory=list)
    evaluation: Evaluation | None = None
    video: str | None = None
    library_version: str = "unknown"

    @property
    def repo_name(self) -> str:
        """The experiment name the download gets (``load_from_hub`` puts it in ``TRAIN_DIR/<repo name>``)."""
        return self.repo_id.split("/")[-1]

    @property
    def algo(self) -> str:
        return str(self.summary.config.get("algo", "APPO"))


def render_model_card(card: CardInputs) -> str:
    """README.md text for the Hub repository."""
    sections = [
        _front_matter(card),
        f"# {card.algo} agent for {card.summary.env}\n\n{_intro(card)}",
        _results(card),
        _replay(card),
        _usage(card),
        _configuration(card),
        _files(card),
    ]
    return "\n\n".join(sections) + "\n"


# ---- header ----------------------------------------------------------------------------------------------------


def _front_matter(card: CardInputs) -> str:
    """YAML between ``---`` lines; strings are written as JSON strings, which YAML reads unchanged."""
    env = json.dumps(card.summary.env)
    lines = ["---", f"library_name: {LIBRARY_NAME}", "tags:", *[f"- {tag}" for tag in TAGS]]
    metric = _headline_metric(card)
    if metric is not None:
        lines += [
            "model-index:",
            f"- name: {json.dumps(card.algo)}",
            "  results:",
            "  - task:",
            "      type: reinforcement-learning",
            "      name: reinforcement-learning",
            "    dataset:",
            f"      name: {env}",
            f"      type: {env}",
            "    metrics:",
            "    - type: mean_reward",
            f"      value: {json.dumps(metric)}",
            "      name: mean_reward",
            "      verified: false",
        ]
    return "\n".join([*lines, "---"])


def _headline_metric(card: CardInputs) -> str | None:
    """The evaluation's ``mean +/- std`` when there is one, else policy 0's training reward, else nothing."""
    if card.evaluation:
        return f"{card.evaluation.mean:.2f} +/- {card.evaluation.std:.2f}"
    first = next((r for r in card.summary.training_rewards if r.policy_id == 0 and r.metric == "reward"), None)
    return None if first is None else f"{first.value:.2f}"


def _intro(card: CardInputs) -> str:
    policies = len(card.summary.checkpoints)
    who = "A policy" if policies == 1 else f"{policies} policies"
    return (
        f"{who} trained on `{card.summary.env}` with sample_factory {card.library_version} ({card.algo}, "
        "asynchronous PPO), a Sample-Factory-2-compatible library. The experiment folder is shared as it was "
        "trained: `config.json` and the latest checkpoint of each policy."
    )


# ---- results and replay ----------------------------------------------------------------------------------------


def _results(card: CardInputs) -> str:
    rewards = {r.policy_id: r for r in card.summary.training_rewards}
    rows = ["| policy | env steps | train steps | training reward | read from |", "|---|---|---|---|---|"]
    for checkpoint in card.summary.checkpoints:
        reward = rewards.get(checkpoint.policy_id)
        shown = "not recorded" if reward is None else f"{reward.value:.3f} ({reward.metric})"
        source = "" if reward is None else reward.source
        rows.append(
            f"| {checkpoint.policy_id} | {checkpoint.env_steps} | {checkpoint.train_step} | {shown} | {source} |"
        )
    text = "## Results\n\n" + "\n".join(rows)
    if card.evaluation:
        evaluation = card.evaluation
        text += (
            f"\n\nEvaluation: mean episode reward **{evaluation.mean:.3f} ± {evaluation.std:.3f}** over "
            f"{len(evaluation.rewards)} episodes of the run that recorded the replay below (policy "
            f"{evaluation.policy_index})."
        )
    return text


def _replay(card: CardInputs) -> str:
    if card.video is None:
        return "## Replay\n\nNo replay video was uploaded with this agent."
    return f'## Replay\n\n<video controls autoplay loop muted src="{card.video}"></video>'


# ---- commands --------------------------------------------------------------------------------------------------


def _usage(card: CardInputs) -> str:
    env, name, scripts = card.summary.env, card.repo_name, card.scripts
    steps = max((c.env_steps for c in card.summary.checkpoints), default=0)
    return "\n".join(
        [
            "## Use it",
            "",
            "Download it into a train_dir, then watch it with the enjoy script of its env:",
            "",
            "```bash",
            'pip install "sample-factory[huggingface]"',
            f"python -m sample_factory.huggingface.load_from_hub -r {card.repo_id} -d {DEFAULT_TRAIN_DIR}",
            f"python -m {scripts.enjoy} --env={env} --experiment={name} --train_dir={DEFAULT_TRAIN_DIR}",
            "```",
            "",
            f"Continue training it (it resumes at {steps} env steps, so ask for more):",
            "",
            "```bash",
            f"python -m {scripts.train} --env={env} --experiment={name} --train_dir={DEFAULT_TRAIN_DIR} "
            f"--train_for_env_steps={max(2 * steps, 1)}",
            "```",
        ]
    )


# ---- configuration and files -----------------------------------------------------------------------------------


def _configuration(card: CardInputs) -> str:
    lines = ["## Training configuration", ""]
    if card.flag_changes:
        lines += [
            f"Flags that differ from the defaults of a new `{card.summary.env}` run (`*`: typed on the training "
            "command line). The full configuration is `config.json`.",
            "",
            "| flag | value | default |",
            "|---|---|---|",
        ]
        lines += [
            f"| `--{c.name}`{'*' if c.typed else ''} | {_cell(c.value)} | {_cell(c.default)} |"
            for c in card.flag_changes
        ]
    else:
        lines.append("Every flag has its default value; the full configuration is `config.json`.")
    command_line = card.summary.config.get("command_line")
    if command_line:
        lines += ["", "Training command line:", "", "```", str(command_line), "```"]
    return "\n".join(lines)


def _cell(value: Any) -> str:
    """A table cell: JSON text (strings quoted, floats as numbers), with ``|`` escaped for Markdown."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value) and abs(value) >= 1e6:
        value = int(value)  # 1e9 "unlimited" counters read better as integers
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text.replace("|", "\\|")


def _files(card: CardInputs) -> str:
    lines = ["## Files", "", "- `config.json`: every flag of the run (enjoy and training read it back)"]
    lines += [
        f"- `{c.relative_path}`: policy {c.policy_id}'s latest checkpoint (model weights with their normalisers, "
        "optimiser state, counters), plain tensors that load with `torch.load(weights_only=True)`"
        for c in card.summary.checkpoints
    ]
    if card.video is not None:
        lines.append(f"- `{card.video}`: the replay shown above")
    return "\n".join(lines)
