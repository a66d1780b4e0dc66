"""The fastest an env can be sampled: worker processes stepping it with random actions, nothing else.

    python -m sf_examples.sampler.random_policy_throughput --env=CartPole-v1 --num_workers=2 \
        --num_envs_per_worker=8 --seconds=10

No policy, no inference, no shared buffers: the reported frames per second are an upper bound for training
with the same ``--num_workers`` and ``--num_envs_per_worker``. If training is far below it, the bottleneck is
the learner or inference; if this number is already low, the env is. Frames are counted frameskip-aware: each
agent step counts ``info["num_frames"]`` frames, or ``--env_frameskip`` when the env does not say.

``--env`` is a Gymnasium id (or ``module:EnvId``), an env of one of this repository's example families (whose flags
and defaults then apply, e.g. ``--env_frameskip=4`` for ``doom_*``; see ``sf_examples/families.py``), or any env that
``--registration_func=module:function`` registers.
"""

from __future__ import annotations

import argparse
import multiprocessing
import queue
import signal
import sys
import time
import traceback
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.algo.utils.context import SampleFactoryContext, set_global_context, sf_global_context
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.create_env import create_env, make_env_config
from sample_factory.envs.env_families import register_cfg_env
from sample_factory.envs.env_info import get_multiagent_info
from sample_factory.envs.env_utils import (
    MissingDependencyError,
    UnknownEnvError,
    add_registration_func_arg,
)
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.families import add_family_args

START_TIMEOUT_S = 120.0  # creating envs can be slow (simulators), but a worker stuck this long is broken
JOIN_TIMEOUT_S = 10.0


@dataclass
class WorkerResult:
    """What one worker measured between the common start signal and its deadline."""

    frames: int
    agent_steps: int
    elapsed: float


# ---- command line and registration -----------------------------------------------------------------------------


def add_throughput_args(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Random-policy throughput", "Flags of the random-policy sampler.")
    group.add_argument("--seconds", type=float, default=10.0, help="How long every worker steps its envs.")
    add_registration_func_arg(parser)


def parse_throughput_args(argv: list[str] | None = None) -> Config:
    """Standard flags, this tool's flags, then the flags and defaults of the ``--env`` family (as in training)."""
    parser, _ = parse_sf_args(argv=argv)
    add_throughput_args(parser)
    partial_cfg, _ = parser.parse_known_args(argv)
    if partial_cfg.env is not None:
        add_family_args(parser, partial_cfg.env, custom_registration=bool(partial_cfg.registration_func))
    return parse_full_cfg(parser, argv)


# ---- worker process --------------------------------------------------------------------------------------------


class _RandomActor:
    """Random actions for every agent of an env; Discrete spaces are sampled for all agents in one numpy call."""

    def __init__(self, env: Any, seed: int) -> None:
        self.multiagent, self.num_agents = get_multiagent_info(env)  # found through any chain of wrappers
        self.space = env.action_space
        self.space.seed(seed)
        self.rng = np.random.default_rng(seed)

    def __call__(self) -> Any:
        if not self.multiagent:
            return self.space.sample()
        if isinstance(self.space, gym.spaces.Discrete):
            return self.rng.integers(self.space.n, size=self.num_agents) + int(self.space.start)
        return [self.space.sample() for _ in range(self.num_agents)]


def _frames_of(infos: Any, num_agents: int, default_frames: int) -> int:
    """Frames one step produced: ``info["num_frames"]`` per agent where given, else ``--env_frameskip``."""
    if isinstance(infos, dict):
        return infos.get("num_frames", default_frames) * num_agents
    if isinstance(infos, (list, tuple)) and len(infos) == num_agents:
        return sum(info.get("num_frames", default_frames) if info else default_frames for info in infos)
    return default_frames * num_agents


def _step_env(env: Any, actor: _RandomActor, default_frames: int) -> int:
    """One random step; single-agent envs are reset here, multi-agent envs reset their agents themselves."""
    obs, rewards, terminated, truncated, infos = env.step(actor())
    if not actor.multiagent and (terminated or truncated):
        env.reset()
    return _frames_of(infos, actor.num_agents, default_frames)


def _make_envs(cfg: Config, worker_idx: int) -> list:
    envs = []
    for vector_idx in range(cfg.num_envs_per_worker):
        env_id = worker_idx * cfg.num_envs_per_worker + vector_idx
        env = create_env(cfg.env, cfg=cfg, env_config=make_env_config(worker_idx, vector_idx, env_id))
        env.reset(seed=None if cfg.seed is None else cfg.seed * 1000 + env_id)
        envs.append(env)
    return envs


def _sample(cfg: Config, envs: list, seed: int) -> WorkerResult:
    actors = [_RandomActor(env, seed + i) for i, env in enumerate(envs)]
    default_frames = max(1, int(cfg.env_frameskip))
    frames = agent_steps = 0
    start = time.monotonic()
    deadline = start + cfg.seconds
    while time.monotonic() < deadline:
        for env, actor in zip(envs, actors, strict=True):
            frames += _step_env(env, actor, default_frames)
            agent_steps += actor.num_agents
    return WorkerResult(frames, agent_steps, time.monotonic() - start)


def _worker_main(cfg: Config, worker_idx: int, ctx: SampleFactoryContext, start_event, results) -> None:
    """Create envs, report ready, wait for the common start, step until the deadline, report, close envs."""
    # Ctrl+C reaches the whole process group; the main process alone handles it and terminates the workers, so an
    # interrupt never lands in the middle of an env's native code
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    set_global_context(ctx)
    envs: list = []
    try:
        envs = _make_envs(cfg, worker_idx)
        results.put(("ready", worker_idx, None))
        if not start_event.wait(START_TIMEOUT_S):
            return
        results.put(("done", worker_idx, _sample(cfg, envs, seed=worker_idx * 7919)))
    except Exception:
        results.put(("error", worker_idx, traceback.format_exc()))
    finally:
        for env in envs:
            env.close()


# ---- main process ----------------------------------------------------------------------------------------------


class _Workers:
    """The worker processes; ``stop()`` always leaves none behind."""

    def __init__(self, cfg: Config) -> None:
        mp = multiprocessing.get_context("spawn")
        self.start_event = mp.Event()
        self.results = mp.Queue()
        self.procs = [
            mp.Process(target=_worker_main, args=(cfg, i, sf_global_context(), self.start_event, self.results))
            for i in range(cfg.num_workers)
        ]

    def start(self) -> None:
        for proc in self.procs:
            proc.start()

    def collect(self, kind: str, timeout: float) -> dict[int, Any]:
        """One ``kind`` message per worker; raises RuntimeError with a worker's traceback or on timeout."""
        got: dict[int, Any] = {}
        deadline = time.monotonic() + timeout
        while len(got) < len(self.procs):
            try:
                msg_kind, worker_idx, payload = self.results.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                if time.monotonic() >= deadline:
                    raise RuntimeError(f"workers {sorted(set(range(len(self.procs))) - set(got))} did not report "
                                       f"'{kind}' within {timeout:.0f}s") from None  # fmt: skip
                continue
            if msg_kind == "error":
                raise RuntimeError(f"worker {worker_idx} failed:\n{payload}")
            got[worker_idx] = payload
        return got

    def stop(self, wait: bool = True) -> None:
        """Join the workers (``wait``) or end them at once (after an error or an interrupt)."""
        for proc in self.procs:
            proc.join(timeout=JOIN_TIMEOUT_S if wait else 0.0)
        for proc in self.procs:
            if proc.is_alive():
                if wait:
                    log.warning("Worker process %d did not exit, terminating it", proc.pid)
                proc.terminate()
                proc.join(timeout=JOIN_TIMEOUT_S)
            if proc.is_alive():
                proc.kill()
                proc.join()
        self.results.close()
        self.results.join_thread()


def measure_throughput(cfg: Config) -> float:
    """Run the workers for ``--seconds`` and return the total env frames per second over all of them."""
    workers = _Workers(cfg)
    workers.start()
    try:
        workers.collect("ready", START_TIMEOUT_S)
        workers.start_event.set()
        results: dict[int, WorkerResult] = workers.collect("done", cfg.seconds + START_TIMEOUT_S)
    except BaseException:
        workers.stop(wait=False)
        raise
    workers.stop()
    fps = sum(r.frames / r.elapsed for r in results.values() if r.elapsed > 0)
    total_frames = sum(r.frames for r in results.values())
    log.info(
        "Random policy on %s: %d workers x %d envs, %d frames (%d agent steps) in %.1f s",
        cfg.env, cfg.num_workers, cfg.num_envs_per_worker, total_frames,
        sum(r.agent_steps for r in results.values()), max(r.elapsed for r in results.values()),
    )  # fmt: skip
    log.info("Sampling throughput FPS: %.1f", fps)
    return fps


def _raise_keyboard_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def main(argv: list[str] | None = None) -> StatusCode:
    cfg = parse_throughput_args(argv)
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)  # `kill` cleans up like Ctrl+C does
    try:
        register_cfg_env(cfg)  # --registration_func, or the env's family: as sample_factory.eval does
    except (UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    try:
        measure_throughput(cfg)
    except KeyboardInterrupt:
        log.warning("Interrupted")
        return ExperimentStatus.INTERRUPTED
    except RuntimeError as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    return ExperimentStatus.SUCCESS


if __name__ == "__main__":
    sys.exit(main())
