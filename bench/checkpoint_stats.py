"""Play checkpoints of two implementations with one code and set side by side what their policies and values say.

    python bench/checkpoint_stats.py mujoco_halfcheetah --at=400000 \\
        --group "ours=/tmp/seed_spread/spread_ours_mujoco_halfcheetah_s*" \\
        --group "Sample Factory 2.1.1=/tmp/seed_spread/spread_sf2_2.1.1_mujoco_halfcheetah_s*"

Each implementation writes its training summaries with its own code, over its own choice of samples (a statistic of
one minibatch, or the mean over several), so a statistic such as the advantages' standard deviation can differ
between the two while what they learned does not. This takes, from every run folder a group's glob matches, the
regular checkpoint (``checkpoint_p0/checkpoint_*.pth``) nearest to ``--at`` env steps, loads it into this package's
model for the task (both implementations write the same state-dict keys), plays ``--envs`` envs for one episode
each, ``--repeats`` times, with actions sampled as in training, and computes from the same code:

- ``episode_return``: the average episode return;
- ``adv_std``: the standard deviation of the GAE advantages (reward units, the family's gamma and GAE lambda) that
  the checkpoint's own value head gives over the episodes' steps, and ``max_z``, the largest advantage in standard
  deviations from their mean (of an episode cut at the time limit, the last ``--tail`` steps are left out: their GAE
  sums are cut short);
- ``expl_var``: how much of the variance of the lambda-returns the value head explains;
- ``log_std``: the mean log standard deviation of the policy's Gaussian (its entropy, up to a constant).

It prints a row per checkpoint (with its env steps: compare checkpoints at about the same steps) and a row per group
(mean ± standard error over its checkpoints), as a Markdown table. The task must be one of the zoo's MuJoCo tasks.
A run stopped early (``bench/seed_spread.py``) keeps its last two checkpoints, which can lie far past its stop in a
fast run: for checkpoints at about the same steps, train with ``--save_every_sec=5 --keep_checkpoints=100``.
"""

from __future__ import annotations

import argparse
import glob
import re
import statistics
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from summary_compare import mean_and_sem, parse_group  # noqa: E402
from zoo_report import MUJOCO_MODULE  # noqa: E402
from zoo_tasks import TASKS, ZooTask  # noqa: E402

CHECKPOINT_NAME = re.compile(r"checkpoint_(\d+)_(\d+)\.pth$")


@dataclass(frozen=True)
class CheckpointStats:
    env_steps: int
    episode_return: float
    adv_std: float
    max_z: float
    expl_var: float
    log_std: float


def nearest_checkpoint(run_dir: Path, env_steps: int) -> tuple[Path, int] | None:
    """The regular checkpoint of policy 0 whose env steps are nearest to ``env_steps`` (the earlier on a tie)."""
    found = []
    for path in (run_dir / "checkpoint_p0").glob("checkpoint_*.pth"):
        match = CHECKPOINT_NAME.search(path.name)
        if match:
            found.append((abs(int(match.group(2)) - env_steps), int(match.group(2)), path))
    if not found:
        return None
    _, steps, path = min(found)
    return path, steps


@dataclass(frozen=True)
class Episode:
    rewards: np.ndarray  # [T]
    values: np.ndarray  # [T], the value head's output for the state each action was taken in (reward units)
    terminated: bool  # ended by the task (the next state is worth 0), not cut at the time limit


def gae(episode: Episode, gamma: float, gae_lambda: float) -> np.ndarray:
    """GAE advantages of an episode's steps: all of them when it terminated (the value after the end is 0), all but
    the last one when it was cut at the time limit (whose next state's value is not known)."""
    rewards, values = episode.rewards, episode.values
    next_values = np.append(values[1:], 0.0)
    if not episode.terminated:
        rewards, values, next_values = rewards[:-1], values[:-1], next_values[:-1]
    advantages = np.zeros(len(rewards))
    running = 0.0
    for t in reversed(range(len(rewards))):
        running = rewards[t] + gamma * next_values[t] - values[t] + gamma * gae_lambda * running
        advantages[t] = running
    return advantages


def advantage_figures(episodes: list[Episode], gamma: float, gae_lambda: float, tail: int) -> dict[str, float]:
    """``adv_std``, ``max_z`` and ``expl_var`` over the steps of the episodes; of an episode cut at the time limit, the
    last ``tail`` steps are left out, since the GAE sums of its last steps lack the steps after the cut."""
    advantages, values = [], []
    for episode in episodes:
        episode_advantages = gae(episode, gamma, gae_lambda)
        keep = len(episode_advantages) if episode.terminated else max(0, len(episode_advantages) - tail)
        advantages.append(episode_advantages[:keep])
        values.append(episode.values[:keep])
    flat, old_values = np.concatenate(advantages), np.concatenate(values)
    if flat.size < 2:
        raise ValueError(f"no steps left to measure: the episodes are shorter than --tail={tail}")
    returns = flat + old_values
    std = float(flat.std())
    max_z = float(np.abs(flat - flat.mean()).max() / std) if std > 0 else 0.0
    expl_var = 1.0 - float(np.var(flat) / np.var(returns)) if np.var(returns) > 0 else float("nan")
    return {"adv_std": std, "max_z": max_z, "expl_var": expl_var}


class Player:
    """This package's model and envs of one MuJoCo task, to play any checkpoint of it with the same code."""

    def __init__(self, task: ZooTask, num_envs: int) -> None:
        if task.train_module != MUJOCO_MODULE:
            raise SystemExit(f"{task.env}: checkpoint_stats plays the zoo's MuJoCo tasks only")
        from sample_factory.model.actor_critic import create_actor_critic
        from sf_examples.mujoco.mujoco_utils import make_mujoco_env
        from sf_examples.mujoco.train_mujoco import parse_mujoco_cfg, register_mujoco_components

        register_mujoco_components()
        argv = [f"--env={task.env}", "--experiment=checkpoint_stats", "--device=cpu", *task.extra_flags]
        self.cfg = parse_mujoco_cfg(argv, evaluation=True)
        self.envs = [make_mujoco_env(task.env, self.cfg, None) for _ in range(num_envs)]
        self.model = create_actor_critic(self.cfg, self.envs[0].observation_space, self.envs[0].action_space)

    def load(self, path: Path) -> None:
        import torch

        self.model.load_state_dict(torch.load(path, map_location="cpu", weights_only=False)["model"])
        self.model.eval()

    def play(self, seed: int) -> list[Episode]:
        """One episode per env, actions sampled as in training."""
        import torch

        from sample_factory.model.model_utils import get_rnn_size

        torch.manual_seed(seed)
        num_envs = len(self.envs)
        obs = np.stack([env.reset(seed=seed * 1000 + i)[0] for i, env in enumerate(self.envs)])
        rnn_states = torch.zeros(num_envs, get_rnn_size(self.cfg))
        rewards: list[list[float]] = [[] for _ in range(num_envs)]
        values: list[list[float]] = [[] for _ in range(num_envs)]
        terminated = [False] * num_envs
        running = list(range(num_envs))
        with torch.no_grad():
            while running:
                normalized = self.model.normalize_obs({"obs": torch.as_tensor(obs, dtype=torch.float32)})
                out = self.model(normalized, rnn_states)
                step_values = out["values"].unsqueeze(-1).clone()
                if self.model.returns_normalizer is not None:
                    step_values = self.model.returns_normalizer(step_values, denormalize=True)
                for i in running:
                    next_obs, reward, term, trunc, _ = self.envs[i].step(out["actions"][i].numpy())
                    rewards[i].append(float(reward))
                    values[i].append(float(step_values[i]))
                    obs[i] = next_obs
                    terminated[i] = bool(term)
                running = [i for i in running if not (terminated[i] or len(rewards[i]) >= self.max_steps(i))]
        return [Episode(np.array(r), np.array(v), t) for r, v, t in zip(rewards, values, terminated, strict=True)]

    def max_steps(self, env_index: int) -> int:
        """The time limit of the task's episodes (Gymnasium's ``TimeLimit``)."""
        return int(self.envs[env_index].spec.max_episode_steps)

    def log_std(self) -> float:
        stddev = getattr(self.model.action_parameterization, "learned_stddev", None)
        return float("nan") if stddev is None else float(stddev.detach().mean())


def checkpoint_stats(player: Player, path: Path, env_steps: int, repeats: int, tail: int) -> CheckpointStats:
    player.load(path)
    episodes = [episode for seed in range(1, repeats + 1) for episode in player.play(seed)]
    figures = advantage_figures(episodes, player.cfg.gamma, player.cfg.gae_lambda, tail)
    return CheckpointStats(
        env_steps=env_steps,
        episode_return=statistics.fmean(float(episode.rewards.sum()) for episode in episodes),
        log_std=player.log_std(),
        **figures,
    )


FIELDS = ("episode_return", "adv_std", "max_z", "expl_var", "log_std")


def table(groups: dict[str, list[tuple[str, CheckpointStats]]]) -> str:
    """Markdown: a row per checkpoint, then a row per group with the mean ± standard error of its checkpoints."""
    lines = ["| group | run | env steps | " + " | ".join(FIELDS) + " |", "| --- " * (3 + len(FIELDS)) + "|"]
    for name, rows in groups.items():
        for run, stats in rows:
            cells = " | ".join(f"{asdict(stats)[key]:.4g}" for key in FIELDS)
            lines.append(f"| {name} | {run} | {stats.env_steps:,} | {cells} |")
    for name, rows in groups.items():
        means = [mean_and_sem([asdict(stats)[key] for _, stats in rows]) for key in FIELDS]
        cells = " | ".join(f"{mean:.4g} ± {sem:.2g}" for mean, sem in means)
        lines.append(f"| **{name}** | {len(rows)} runs | | {cells} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    mujoco = sorted(name for name, task in TASKS.items() if task.train_module == MUJOCO_MODULE)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", choices=mujoco)
    parser.add_argument("--group", type=parse_group, action="append", required=True, help="NAME=GLOB of run folders")
    parser.add_argument("--at", type=int, required=True, help="env steps: each run's checkpoint nearest to them")
    parser.add_argument("--envs", type=int, default=8, help="envs played at once, one episode each")
    parser.add_argument("--repeats", type=int, default=2, help="how many times the envs play an episode")
    parser.add_argument("--tail", type=int, default=100, help="last steps left out (their GAE sum is cut short)")
    args = parser.parse_args(argv)
    player = Player(TASKS[args.task], args.envs)
    groups: dict[str, list[tuple[str, CheckpointStats]]] = {}
    for name, pattern in args.group:
        rows = []
        for run_dir in sorted(Path(p) for p in glob.glob(pattern) if Path(p).is_dir()):
            found = nearest_checkpoint(run_dir, args.at)
            if found is not None:
                rows.append((run_dir.name, checkpoint_stats(player, found[0], found[1], args.repeats, args.tail)))
        if not rows:
            print(f"--group {name}: no run folder with a checkpoint_p0/checkpoint_*.pth matches {pattern!r}")
            return 2
        groups[name] = rows
    print(table(groups))
    return 0


if __name__ == "__main__":
    sys.exit(main())
