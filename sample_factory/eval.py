"""Fast evaluation of a trained policy: ``do_eval(cfg) -> status``.

Many envs (``--num_workers * --num_envs_per_worker`` from the experiment's config, or as passed now) are stepped
in this process with one batched forward pass per step, for ``--max_num_episodes`` whole episodes. Each episode
(per agent, in multi-agent envs) becomes a row of ``eval_results.csv`` in the experiment folder: ``env``,
``agent``, ``episode``, ``reward``, ``length``, ``true_objective`` and any ``episode_extra_stats`` keys.

Why episodes are counted when they *start*: stopping once N episodes have *finished* keeps the ones that finished
first, i.e. the short ones, and biases the averages (towards failures in CartPole-like tasks). Here the first N
episodes to start are the sample: whether an episode is included is decided before it runs, so its outcome
cannot influence that decision; episodes in progress when the budget is used up are run to their end, and
episodes started afterwards are ignored. ``--max_num_frames`` is a safety cap: if it cuts the run short, the
unfinished episodes are dropped with a warning.

Command line, for an experiment of any env family (the experiment's config.json supplies the rest)::

    python -m sample_factory.eval --env=CartPole-v1 --experiment=cartpole --max_num_episodes=200
    python -m sample_factory.eval --env=my_env --registration_func=my_pkg.envs:register_envs --experiment=...
"""

from __future__ import annotations

import csv
import os
import sys
import time

import numpy as np
import torch

from sample_factory.algo.sampling.evaluation_episodes import (
    ActorTracker,
    AgentPolicy,
    EpisodeBudget,
    EpisodeRecord,
    EpisodeStepper,
    make_eval_envs,
)
from sample_factory.algo.utils.checkpoints import CheckpointError
from sample_factory.cfg.arguments import load_from_checkpoint, parse_full_cfg, parse_sf_args
from sample_factory.cfg.validation import unavailable_feature_problems, warn_about_hub_flags
from sample_factory.enjoy import NoCheckpointError, load_agent_policies
from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_families import add_family_args, discover_env_families
from sample_factory.envs.env_families import register_cfg_env as register_eval_env
from sample_factory.envs.env_info import EnvInfo, extract_env_info
from sample_factory.envs.env_utils import (
    MissingDependencyError,
    UnknownEnvError,
    add_registration_func_arg,
)
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.torch_utils import init_torch_runtime
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import experiment_dir

EVAL_RESULTS_FILE = "eval_results.csv"
DEFAULT_NUM_EPISODES = 100  # when neither --max_num_episodes nor --max_num_frames was lowered from "unlimited"
UNLIMITED = 10**9
CSV_COLUMNS = ["env", "agent", "episode", "reward", "length", "true_objective"]
# flags of the shared evaluation parser that only enjoy acts on: eval never renders, records or changes the frameskip
ENJOY_ONLY_FLAGS = ("save_video", "video_frames", "video_name", "fps", "no_render", "eval_env_frameskip")
DEFAULT_ENJOY_SCRIPT = "sf_examples.enjoy_gym_env"


def eval_budget(cfg: AttrDict) -> int:
    """``--max_num_episodes``, or a default when the user left both limits at "unlimited"."""
    if cfg.max_num_episodes >= UNLIMITED and cfg.max_num_frames >= UNLIMITED:
        log.info("No --max_num_episodes given: evaluating %d episodes", DEFAULT_NUM_EPISODES)
        return DEFAULT_NUM_EPISODES
    return int(min(cfg.max_num_episodes, UNLIMITED))


@torch.no_grad()
def run_eval_episodes(
    cfg: AttrDict,
    envs: list,
    env_info: EnvInfo,
    policies: list[AgentPolicy],
    device: torch.device,
    tracker: ActorTracker,
) -> int:
    """Step every env that still plays an evaluated episode until the budget is done; returns env steps taken."""
    stepper = EpisodeStepper(envs, env_info, policies, device, cfg, cfg.eval_deterministic)
    stepper.begin(tracker, [None if cfg.seed is None else int(cfg.seed) + i for i in range(len(envs))])
    frames = 0
    while not tracker.done() and frames < cfg.max_num_frames:
        frames += stepper.step()
    return frames


def num_eval_envs(cfg: AttrDict, env_info: EnvInfo, num_episodes: int) -> int:
    """The training layout's env count; single-agent envs beyond the number of episodes would only idle."""
    num_envs = max(1, int(cfg.num_workers) * int(cfg.num_envs_per_worker))
    return num_envs if env_info.is_multiagent else max(1, min(num_envs, num_episodes))


def write_results(cfg: Config, records: list[EpisodeRecord]) -> str:
    """``eval_results.csv`` in the experiment folder, one row per episode in episode order."""
    path = os.path.join(experiment_dir(cfg), EVAL_RESULTS_FILE)
    extra_keys = sorted({key for record in records for key in record.extra})
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(CSV_COLUMNS + extra_keys)
        for r in sorted(records, key=lambda rec: rec.episode):
            row = [r.env, r.agent, r.episode, f"{r.reward:.6g}", r.length, f"{r.true_objective:.6g}"]
            writer.writerow(row + [f"{r.extra[k]:.6g}" if k in r.extra else "" for k in extra_keys])
    return path


def summarize(records: list[EpisodeRecord], frames: int, seconds: float) -> str:
    """A short human summary of the evaluated episodes."""
    if not records:
        return f"No evaluated episode finished ({frames} env steps)"
    rewards = np.array([r.reward for r in records])
    lengths = np.array([r.length for r in records])
    objectives = np.array([r.true_objective for r in records])
    return (
        f"Evaluated {len(records)} episodes, {frames} env steps in {seconds:.1f} s ({frames / max(seconds, 1e-9):.0f} "
        f"steps/s): reward {rewards.mean():.3f} +- {rewards.std():.3f} (min {rewards.min():.3f}, max "
        f"{rewards.max():.3f}), length {lengths.mean():.1f}, true objective {objectives.mean():.3f}"
    )


def do_eval(cfg: Config) -> StatusCode:
    """Evaluate the trained policy of ``cfg``'s experiment; writes ``eval_results.csv`` and logs a summary."""
    refused = unavailable_feature_problems(cfg)
    if refused:
        log.error("%s", refused[0])
        return ExperimentStatus.FAILURE
    warn_about_hub_flags(cfg)
    warn_about_enjoy_only_flags(cfg)
    try:
        cfg = load_from_checkpoint(cfg)
        return _eval_loaded(cfg)
    except (FileNotFoundError, NoCheckpointError, CheckpointError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE


def _eval_loaded(cfg: AttrDict) -> StatusCode:
    init_torch_runtime(cfg, max_num_threads=1)  # batches are small: extra threads only add synchronisation cost
    probe = create_env(cfg.env, cfg=cfg, env_config=AttrDict(worker_index=0, vector_index=0, env_id=0))
    try:
        env_info = extract_env_info(probe, cfg)
    finally:
        probe.close()
    return generate_trajectories(cfg, env_info, eval_budget(cfg))


def generate_trajectories(cfg: Config, env_info: EnvInfo, sample_env_episodes: int = 1024) -> StatusCode:
    """Play ``sample_env_episodes`` episodes of the trained policy of ``cfg``'s experiment (its config loaded, as
    :func:`do_eval` does) and write them to ``eval_results.csv``; returns the status.

    ``env_info`` describes ``--env`` (``extract_env_info``); the episodes counted are the first ones to start.
    """
    policies, device = load_agent_policies(cfg, env_info)
    num_episodes = int(sample_env_episodes)
    envs = make_eval_envs(cfg, env_info, num_eval_envs(cfg, env_info, num_episodes))
    tracker = ActorTracker([env.num_agents for env in envs], EpisodeBudget(num_episodes))
    status, frames, started = ExperimentStatus.SUCCESS, 0, time.monotonic()
    try:
        frames = run_eval_episodes(cfg, envs, env_info, policies, device, tracker)
    except KeyboardInterrupt:
        log.warning("Interrupted: writing the episodes finished so far")
        status = ExperimentStatus.INTERRUPTED
    finally:
        for env in envs:
            env.close()
    if status == ExperimentStatus.SUCCESS and not tracker.done():
        log.warning("--max_num_frames=%d cut the evaluation short: unfinished episodes dropped", cfg.max_num_frames)
    path = write_results(cfg, tracker.records)
    log.info("%s; per-episode results in %s", summarize(tracker.records, frames, time.monotonic() - started), path)
    return status


def warn_about_enjoy_only_flags(cfg: Config) -> None:
    """Typed enjoy flags would silently do nothing here: name each one and the script that honours it."""
    explicit = cfg.cli_args
    typed = [f"--{name}" for name in ENJOY_ONLY_FLAGS if name in explicit]
    if not typed:
        return
    enjoy_script = cfg.enjoy_script or DEFAULT_ENJOY_SCRIPT
    log.warning(
        "%s: no effect in sample_factory.eval (it never renders or records, and steps envs at the training "
        "frameskip); use the enjoy script instead, e.g. python -m %s --env=%s --experiment=%s",
        ", ".join(typed),
        enjoy_script,
        cfg.env,
        cfg.experiment,
    )


# ---- command line ----------------------------------------------------------------------------------------------


def parse_eval_args(argv: list[str] | None) -> Config:
    """Evaluation flags, ``--registration_func``, then the ``--env`` family's flags and defaults (as in training)."""
    parser, _ = parse_sf_args(argv, evaluation=True)
    add_registration_func_arg(parser)
    partial_cfg, _ = parser.parse_known_args(argv)
    if partial_cfg.env is not None:
        custom = bool(partial_cfg.registration_func)
        add_family_args(parser, partial_cfg.env, evaluation=True, custom_registration=custom)
    return parse_full_cfg(parser, argv)


def main(argv: list[str] | None = None) -> StatusCode:
    """``python -m sample_factory.eval``: register the env, then :func:`do_eval`; exit status 1 on any setup error."""
    discover_env_families()
    cfg = parse_eval_args(argv)
    try:
        register_eval_env(cfg)
    except (UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return do_eval(cfg)


if __name__ == "__main__":
    sys.exit(main())
