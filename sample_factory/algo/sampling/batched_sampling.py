"""Sample Factory 2's ``BatchedVectorEnvRunner``: one split stepped as a batch (``--batched_sampling=True``).

The split's envs come from ``make_env_func_batched`` (a natively vectorised env as is, anything else stacked by
``SequentialVectorizeWrapper``) and are stepped by :class:`BatchedEnvRunner`; see
``sample_factory.algo.sampling.vector_env_runner`` for the constructor's parameters and the methods.
``preprocess_actions`` turns a batch of stored action rows into what a batched env's ``step`` takes.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.sampling.env_runner import BatchedEnvRunner, EpisodeStats
from sample_factory.algo.sampling.vector_env_runner import VectorEnvRunner
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.make_env import make_env_func_batched
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config


class BatchedVectorEnvRunner(VectorEnvRunner):
    """A split of ``num_envs`` envs stepped as one batch, writing each step with single tensor operations."""

    batched = True

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        num_envs: int,
        worker_idx: int,
        split_idx: int,
        buffer_mgr: TensorDict | None,
        sampling_device: str,
        training_info: list[dict | None] | None,
    ) -> None:
        super().__init__(cfg, env_info, worker_idx, split_idx, buffer_mgr, sampling_device, num_envs, training_info)

    def _make_runner(self) -> BatchedEnvRunner:
        env = make_env_func_batched(self.cfg, self._env_config(0), num_envs=self.num_envs)
        if env.num_agents != self.num_actors:
            env.close()
            raise ValueError(
                f"the batched env has {env.num_agents} actors, but num_envs={self.num_envs} x "
                f"env_info.num_agents={self.env_info.num_agents} = {self.num_actors} were expected"
            )
        return BatchedEnvRunner(self.cfg, self.env_info, env, self.traj, EpisodeStats(0))


def process_action_space(
    actions: Tensor, gpu_actions: bool, is_discrete: bool, to_numpy: bool = True
) -> Tensor | np.ndarray:
    """One action component of a batch as a batched env's ``step`` takes it.

    ``actions`` are rows of the trajectory buffers' layout, ``[N, k]``. A Discrete component (``is_discrete``) loses
    its trailing dimension of 1 and becomes integers, ``[N]``. An env that takes actions on the device
    (``gpu_actions``) gets the tensor as it is; any other gets it on the CPU, as a numpy array when ``to_numpy``.
    """
    if is_discrete:
        if actions.dim() > 1 and actions.shape[-1] == 1:
            actions = actions.squeeze(-1)
        actions = actions.long()
    if gpu_actions:
        return actions
    actions = actions.cpu()
    return actions.numpy() if to_numpy else actions


def preprocess_actions(
    env_info: EnvInfo, actions: Tensor, to_numpy: bool = True
) -> Tensor | np.ndarray | tuple[Tensor | np.ndarray, ...]:
    """A batch of action rows ``[N, num_actions]`` as a batched env with ``env_info``'s action space takes them.

    Discrete and Box spaces: one array (see :func:`process_action_space`). Tuple spaces: the rows are cut into their
    components (``env_info.action_splits``) and a tuple of one array per component is returned, Discrete components
    as ``[N]`` integers.
    """
    space = env_info.action_space
    gpu = bool(env_info.gpu_actions)
    if isinstance(space, gym.spaces.Tuple):
        parts = torch.split(actions, list(env_info.action_splits), dim=-1)
        return tuple(
            process_action_space(part, gpu, isinstance(sub, gym.spaces.Discrete), to_numpy)
            for part, sub in zip(parts, space.spaces, strict=True)
        )
    if isinstance(space, gym.spaces.Discrete | gym.spaces.Box | gym.spaces.MultiDiscrete):
        return process_action_space(actions, gpu, isinstance(space, gym.spaces.Discrete), to_numpy)
    raise TypeError(
        f"preprocess_actions: action space {space} is not supported; use Discrete, Box, MultiDiscrete or a Tuple "
        "of them"
    )
