"""Sample Factory 2's per-split runner classes, as thin adapters over our split runners.

Sample Factory 2 scripts and tests build ``BatchedVectorEnvRunner`` / ``NonBatchedVectorEnvRunner`` with
``(cfg, env_info, num_envs, worker_idx, split_idx, buffer_mgr, sampling_device, training_info)`` to step one split of
a rollout worker outside the full system. Here the rollout worker drives :class:`BatchedEnvRunner` or
:class:`NonBatchedEnvRunner` through messages; these adapters own one of them plus its trajectory slots and let
the caller drive it directly: :meth:`VectorEnvRunner.init` creates and resets the envs, :meth:`~VectorEnvRunner.step`
applies one step of actions, :meth:`~VectorEnvRunner.close` closes the envs.

There is no buffer manager object here. ``buffer_mgr`` is either ``None`` (a private trajectory buffer with one slot
per actor is allocated) or the trajectory :class:`TensorDict` of the whole run (as made by ``allocate_trajectories``),
in which the split's actors use the slots a rollout worker would give them first: consecutive slots starting at
``(worker_idx * num_envs_per_worker + split_idx * num_envs) * num_agents``.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.sampling.decorrelation import decorrelation_steps
from sample_factory.algo.sampling.env_runner import (
    BatchedEnvRunner,
    EpisodeStats,
    NonBatchedEnvRunner,
    env_seed,
    split_env_config,
)
from sample_factory.algo.utils.shared_buffers import allocate_trajectories
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.env_utils import find_training_info_interface
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config


class VectorEnvRunner:
    """One split's envs and trajectory slots, stepped by the caller (base of the two Sample Factory 2 names)."""

    batched: bool = False

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        worker_idx: int,
        split_idx: int,
        buffer_mgr: TensorDict | None,
        sampling_device: str,
        num_envs: int | None = None,
        training_info: list[dict | None] | None = None,
    ) -> None:
        """Sample Factory 2's base parameters; ``num_envs`` defaults to one split's share of
        ``--num_envs_per_worker`` (the two runner classes take it third, as Sample Factory 2's do)."""
        if num_envs is None:
            num_envs = cfg.num_envs_per_worker // max(1, cfg.worker_num_splits)
        if torch.device(sampling_device).type != "cpu":
            raise ValueError(
                f"sampling_device={sampling_device!r} is not supported: trajectories live in CPU (shared) memory "
                "here and the envs' outputs are copied there; pass sampling_device='cpu'"
            )
        if num_envs < 1:
            raise ValueError(f"num_envs={num_envs} must be >= 1")
        self.cfg, self.env_info = cfg, env_info
        self.num_envs, self.worker_idx, self.split_idx = num_envs, worker_idx, split_idx
        self.sampling_device = sampling_device
        self.training_info = training_info
        self.num_actors = num_envs * env_info.num_agents
        self.traj, self.first_slot = self._trajectory_slots(buffer_mgr)
        self.runner: BatchedEnvRunner | NonBatchedEnvRunner | None = None

    def _trajectory_slots(self, buffer_mgr: TensorDict | None) -> tuple[TensorDict, int]:
        if buffer_mgr is None:
            return allocate_trajectories(self.cfg, self.env_info, self.num_actors, share=False), 0
        first = (self.worker_idx * self.cfg.num_envs_per_worker + self.split_idx * self.num_envs) * (
            self.env_info.num_agents
        )
        available = len(buffer_mgr["rewards"])
        if first + self.num_actors > available:
            raise ValueError(
                f"buffer_mgr has {available} trajectory slots but worker {self.worker_idx}, split {self.split_idx} "
                f"needs slots {first}..{first + self.num_actors - 1}: allocate at least "
                f"{first + self.num_actors} slots, or pass buffer_mgr=None for a private buffer"
            )
        return buffer_mgr, first

    # ---- the Sample Factory 2 style API
    def init(self, timing: object | None = None) -> None:
        """Create the split's envs and reset them; their first observations go to step 0 of the slots.

        Non-batched envs then take their random steps (``--decorrelate_envs_on_one_worker``), each as the env of its
        index in the worker (``split_idx * num_envs + i``), like a rollout worker's.

        ``timing`` is accepted for Sample Factory 2 callers and not used.
        """
        del timing
        self.runner = self._make_runner()
        self.runner.state.slots[:] = np.arange(self.first_slot, self.first_slot + self.num_actors)
        self.runner.stats = EpisodeStats(self.num_actors)
        seeds = [env_seed(self.cfg, self.worker_idx, self.split_idx, i) for i in range(self.num_envs)]
        steps = [0 if self.batched else decorrelation_steps(self.cfg, self.split_idx * self.num_envs + i)
                 for i in range(self.num_envs)]  # fmt: skip
        if any(steps):
            self.runner.reset(seeds, steps)
        else:
            self.runner.reset(seeds)
        self.update_training_info(self.training_info)

    def _make_runner(self) -> BatchedEnvRunner | NonBatchedEnvRunner:
        raise NotImplementedError  # each subclass picks its runner

    def _env_config(self, i: int):
        return split_env_config(self.cfg, self.worker_idx, self.split_idx * self.num_envs + i)

    @property
    def envs(self) -> list:
        """The env objects of the split."""
        runner = self._require_init()
        return list(runner.envs) if isinstance(runner, NonBatchedEnvRunner) else runner.env.envs

    def update_training_info(self, training_info: list[dict | None] | None) -> None:
        """Hand policy 0's training info to every env of the split that implements ``TrainingInfoInterface``."""
        self.training_info = training_info
        if not training_info or training_info[0] is None:
            return
        for env in self.envs:
            interface = find_training_info_interface(env)
            if interface is not None:
                interface.set_training_info(training_info[0])

    def step(self, actions: Tensor | np.ndarray) -> np.ndarray:
        """Store ``actions`` (``[num_actors, *action_shape]``) at the current step, step the envs, return the dones.

        After ``--rollout`` steps the next call starts a new rollout in the same slots: the last observation moves
        to step 0.
        """
        runner = self._require_init()
        if runner.state.t == self.cfg.rollout:
            self._restart_rollout()
        slots = torch.from_numpy(runner.state.slots)
        self.traj["actions"][slots, runner.state.t] = torch.as_tensor(actions).to(self.traj["actions"].dtype)
        runner.step()
        return np.asarray(runner.last_dones, dtype=bool).copy()

    def _restart_rollout(self) -> None:
        slots, last = torch.from_numpy(self.runner.state.slots), self.cfg.rollout
        for tensor in self.traj["obs"].values():
            tensor[slots, 0] = tensor[slots, last]
        self.runner.state.t = 0
        self.runner.state.frames[:] = 0

    def trajectories(self) -> TensorDict:
        """The split's slots of the trajectory buffers (a copy), ``[num_actors, T(+1), ...]`` per key."""
        return self.traj[torch.from_numpy(self._require_init().state.slots)]

    @property
    def t(self) -> int:
        """Steps taken in the current rollout."""
        return self._require_init().state.t

    def finished_episodes(self) -> list[tuple]:
        """``(policy_id, reward, length, true_objective, extra_stats)`` of the episodes finished since last asked."""
        stats = self._require_init().stats
        finished, stats.finished = stats.finished, []
        return finished

    def _require_init(self) -> BatchedEnvRunner | NonBatchedEnvRunner:
        if self.runner is None:
            raise RuntimeError(f"{type(self).__name__}.init() must be called before stepping or reading the envs")
        return self.runner

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
            self.runner = None
