"""Shared-memory tensors allocated once at start-up: trajectories, free-slot lists, weights.

Layout of one trajectory slot (``T = --rollout``), the contract between the
rollout workers, inference workers and the learner:

- ``obs[key]``        [T+1, *obs_shape]  observation before each step; index T is the one after the last step
- ``rnn_states``      [T+1, rnn_size]    policy state before each step (zeros at an episode start)
- ``actions``         [T, *action_shape] ``log_prob_actions`` [T], ``action_logits`` [T, P], ``values`` [T]
- ``policy_version``  [T]                version of the policy that chose the action
- ``rewards``, ``dones``, ``time_outs`` [T] float32; ``valids`` [T] bool (False for inactive agents)

Every tensor has a leading slot dimension. Processes index slots with integers
that travel through the free-slot queue and the control messages.
"""

from __future__ import annotations

import math
import queue
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.utils.action_distributions import calc_num_action_parameters, get_action_distribution
from sample_factory.algo.utils.env_info import EnvInfo
from sample_factory.algo.utils.tensor_dict import TensorDict
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.typing import Config


def obs_space_dict(obs_space) -> dict[str, Any]:
    """A plain Box observation space appears to the model as the dict ``{"obs": space}``."""
    spaces = getattr(obs_space, "spaces", None)
    if isinstance(spaces, dict):
        return dict(spaces)
    return {"obs": obs_space}


def _torch_dtype(np_dtype) -> torch.dtype:
    return torch.from_numpy(np.zeros(1, dtype=np_dtype)).dtype


def action_template(action_space) -> Tensor:
    """One sampled action (batch of 1) from uniform logits: gives the buffer's action shape and dtype."""
    logits = torch.zeros(1, calc_num_action_parameters(action_space))
    return get_action_distribution(action_space, logits).sample()


def num_actors_total(cfg: Config, env_info: EnvInfo) -> int:
    return cfg.num_workers * cfg.num_envs_per_worker * env_info.num_agents


def trajectories_per_batch(cfg: Config) -> int:
    """How many trajectory slots make one training batch of ``batch_size * num_batches_per_epoch`` samples."""
    return (cfg.batch_size * cfg.num_batches_per_epoch) // cfg.rollout


def num_trajectory_slots(cfg: Config, env_info: EnvInfo) -> int:
    """Enough slots that every actor can fill one trajectory while the learners hold what they need.

    Async: each actor fills one slot while its previous one waits to be copied into a
    batch, plus one batch worth per policy for the batcher. Sync: exactly enough for
    whole training batches, so that sampling stops while the learner trains.
    """
    actors = num_actors_total(cfg, env_info)
    per_batch = trajectories_per_batch(cfg)
    if not cfg.async_rl:
        rounds = math.ceil(per_batch * cfg.num_policies / actors)
        return max(1, rounds) * actors
    return 2 * actors + per_batch * cfg.num_policies


def allocate_trajectories(cfg: Config, env_info: EnvInfo, num_slots: int, share: bool = True) -> TensorDict:
    T = cfg.rollout
    obs = TensorDict()
    for key, space in obs_space_dict(env_info.obs_space).items():
        obs[key] = torch.zeros((num_slots, T + 1, *space.shape), dtype=_torch_dtype(space.dtype))
    act = action_template(env_info.action_space)
    traj = TensorDict(
        obs=obs,
        rnn_states=torch.zeros(num_slots, T + 1, get_rnn_size(cfg)),
        actions=torch.zeros((num_slots, T, *act.shape[1:]), dtype=act.dtype),
        log_prob_actions=torch.zeros(num_slots, T),
        action_logits=torch.zeros(num_slots, T, calc_num_action_parameters(env_info.action_space)),
        values=torch.zeros(num_slots, T),
        policy_version=torch.zeros(num_slots, T, dtype=torch.int64),
        rewards=torch.zeros(num_slots, T),
        dones=torch.zeros(num_slots, T),
        time_outs=torch.zeros(num_slots, T),
        valids=torch.zeros(num_slots, T, dtype=torch.bool),
    )
    return traj.share_memory_() if share else traj


def numpy_views(td: TensorDict) -> dict:
    """Numpy arrays sharing memory with each leaf: cheap scalar writes from the rollout loop."""
    return {k: numpy_views(v) if isinstance(v, dict) else v.numpy() for k, v in td.items()}


class LocalQueue:
    """In-process stand-in for the faster-fifo free-slot queue (serial mode)."""

    def __init__(self) -> None:
        import collections

        self._items: collections.deque = collections.deque()

    def put_many(self, items: list, block: bool = True, timeout: float = 0.0) -> None:
        self._items.extend(items)

    def put(self, item: Any, block: bool = True, timeout: float = 0.0) -> None:
        self._items.append(item)

    def get_many(self, block: bool = True, timeout: float = 0.0, max_messages_to_get: int = 1_000_000) -> list:
        if not self._items:
            raise queue.Empty
        n = min(max_messages_to_get, len(self._items))
        return [self._items.popleft() for _ in range(n)]


class PolicyWeights:
    """A policy's latest weights in shared memory plus a version counter.

    The learner copies its state dict in under the lock and then bumps the version;
    an inference worker that sees a newer version copies the weights out under the
    same lock, so it never loads a half-written state.
    """

    def __init__(self, state_dict: dict[str, Tensor], lock: Any) -> None:
        self.tensors = {k: v.detach().cpu().clone().share_memory_() for k, v in state_dict.items()}
        self.version = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.lock = lock

    def publish(self, state_dict: dict[str, Tensor], version: int) -> None:
        with self.lock:
            for key, value in state_dict.items():
                self.tensors[key].copy_(value.detach())
            self.version[0] = version

    def latest_version(self) -> int:
        return int(self.version[0])

    def load_into(self, model: torch.nn.Module) -> int:
        with self.lock:
            model.load_state_dict(self.tensors, strict=True)
            return int(self.version[0])


def make_free_slot_queue(serial: bool, num_slots: int) -> Any:
    """The queue of trajectory slots ready to be filled; starts with all of them."""
    if serial:
        q: Any = LocalQueue()
    else:
        from faster_fifo import Queue

        q = Queue(max_size_bytes=max(1_000_000, num_slots * 64))
    q.put_many(list(range(num_slots)))
    return q
