"""Batched envs for ``--batched_sampling=True``: any env, presented as one object that steps a whole split.

The batched sampler writes a step of all of a split's actors with single tensor operations, so it needs one env
object whose ``step`` covers every actor and returns stacked arrays. Envs get there in one of two ways:

- A *natively vectorised* env (one object that already simulates many agents: a numpy or GPU simulator) is used as
  it is. It is recognised by the multi-agent protocol (``num_agents > 1`` or ``is_multiagent``) together with an
  action space whose stored rows are the env's actions (:func:`rows_are_env_actions`), when it is alone in its split
  (``--num_envs_per_worker`` equal to ``--worker_num_splits``). Such an env steps all its agents in one call and
  auto-resets them, so wrapping it would only add copies.
- Everything else (plain Gymnasium envs, several envs per split, multi-agent envs with Tuple actions) is stepped one
  env after another by :class:`SequentialVectorizeWrapper`, which writes into arrays allocated once.

:class:`BatchedVecEnv` then presents numpy outputs as torch tensors without copying, and hands the env the
sampler's action tensor as numpy rows (or as a tensor on the training device with ``--env_gpu_actions=True``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import Tensor

from sample_factory.envs.action_conversion import make_action_converter, rows_are_env_actions
from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_contract import reset_env
from sample_factory.envs.env_info import env_attribute, get_multiagent_info, is_multiagent_env
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.gpu_utils import env_actions_device
from sample_factory.utils.typing import Config

_NUMPY_OF = {torch.float32: np.float32, torch.bool: np.bool_}


def is_natively_vectorized(env: Any) -> bool:
    """An env that steps all its agents in one call and takes the batch of stored action rows as its actions."""
    return is_multiagent_env(env) and rows_are_env_actions(env.action_space)


def _allocate_stacked(space: Any, num: int) -> np.ndarray:
    if space.shape is None:
        raise ValueError(
            f"observation space {space} has no fixed shape, so observations cannot be stacked into one array: "
            "make the env return a Box (or a Dict of Box/Discrete spaces), e.g. with "
            "gymnasium.wrappers.FlattenObservation"
        )
    return np.zeros((num, *space.shape), dtype=space.dtype)


class SequentialVectorizeWrapper:
    """Steps ``envs`` one after another and presents them as one multi-agent env of all their agents.

    Each env contributes ``num_agents`` consecutive actors (one for a single-agent env). Observations (an array, or a
    dict of arrays for a Dict space), rewards (float32), ``terminated`` and ``truncated`` (bool) are stacked in arrays
    allocated once: every ``reset``/``step`` returns the same array objects, overwritten by the next call, so copy
    what you keep. A single-agent env whose episode ended is reset on the spot: its row holds the first observation
    of the next episode and its info is the one of the step that ended the episode (episode stats live there).
    Multi-agent envs reset their agents themselves, as the multi-agent protocol requires.
    """

    is_multiagent = True

    def __init__(self, envs: Sequence) -> None:
        if len(envs) == 0:
            raise ValueError("SequentialVectorizeWrapper needs at least one env, got an empty sequence")
        self.envs = list(envs)
        self.observation_space = self.envs[0].observation_space
        self.action_space = self.envs[0].action_space
        self._check_same_spaces()
        self.render_mode = env_attribute(self.envs[0], "render_mode", None)
        infos = [get_multiagent_info(env) for env in self.envs]  # through the envs' wrappers, if any
        self._agents = [num_agents for _, num_agents in infos]
        self._multiagent = [multiagent for multiagent, _ in infos]
        self._offsets = [int(offset) for offset in np.cumsum([0, *self._agents[:-1]])]
        self.num_agents = sum(self._agents)
        self._convert_action = make_action_converter(self.action_space)
        n = self.num_agents
        if isinstance(getattr(self.observation_space, "spaces", None), dict):
            self._obs: np.ndarray | dict[str, np.ndarray] = {
                key: _allocate_stacked(space, n) for key, space in obs_space_dict(self.observation_space).items()
            }
        else:
            self._obs = _allocate_stacked(self.observation_space, n)
        self._rewards = np.zeros(n, dtype=np.float32)
        self._terminated = np.zeros(n, dtype=bool)
        self._truncated = np.zeros(n, dtype=bool)
        self._infos: list[dict] = [{} for _ in range(n)]

    def _check_same_spaces(self) -> None:
        first = self.envs[0]
        for i, env in enumerate(self.envs[1:], start=1):
            for name in ("observation_space", "action_space"):
                if getattr(env, name) != getattr(first, name):
                    raise ValueError(
                        f"env {i} has {name} {getattr(env, name)} but env 0 has {getattr(first, name)}: envs stepped "
                        "as one batch need identical spaces (their observations and actions are stacked)"
                    )

    # ---- writing one env's outputs into the stacked arrays
    def _write_obs(self, actor: int, obs: Any) -> None:
        if isinstance(self._obs, dict):
            for key, buffer in self._obs.items():
                buffer[actor] = obs[key]
        else:
            self._obs[actor] = obs

    def _write_agents_obs(self, start: int, num: int, obs: Any) -> None:
        """A multi-agent env's observations: an array/list per agent, or a dict of per-agent arrays."""
        if isinstance(self._obs, dict) and not isinstance(obs, dict):
            for agent in range(num):
                self._write_obs(start + agent, obs[agent])
        elif isinstance(self._obs, dict):
            for key, buffer in self._obs.items():
                buffer[start : start + num] = obs[key]
        else:
            self._obs[start : start + num] = obs

    def _write_agents_infos(self, start: int, num: int, infos: Any) -> None:
        per_agent = isinstance(infos, (list, tuple))
        for agent in range(num):
            self._infos[start + agent] = infos[agent] if per_agent else {}

    # ---- the env API
    def _env_seeds(self, seed: int | Sequence[int | None] | None) -> list[int | None]:
        if seed is None or isinstance(seed, (int, np.integer)):
            return [None if seed is None else int(seed) + i for i in range(len(self.envs))]
        if len(seed) != len(self.envs):
            raise ValueError(f"reset got {len(seed)} seeds for {len(self.envs)} envs: pass one int or one per env")
        return list(seed)

    def reset(
        self, seed: int | Sequence[int | None] | None = None, options: dict | None = None
    ) -> tuple[np.ndarray | dict[str, np.ndarray], list[dict]]:
        """Reset every env; an int ``seed`` seeds env ``i`` with ``seed + i`` (as Gymnasium's vector envs do)."""
        kwargs = {} if options is None else {"options": options}
        for i, (env, env_seed) in enumerate(zip(self.envs, self._env_seeds(seed), strict=True)):
            obs, info = reset_env(env, env_seed, **kwargs)
            start, num = self._offsets[i], self._agents[i]
            if self._multiagent[i]:
                self._write_agents_obs(start, num, obs)
                self._write_agents_infos(start, num, info)
            else:
                self._write_obs(start, obs)
                self._infos[start] = info
        self._rewards[:] = 0.0
        self._terminated[:] = False
        self._truncated[:] = False
        return self._obs, self._infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, list[dict]]:
        """Step every env with its actors' rows of ``actions`` (``[num_agents, ...]``, as the sampler stores them)."""
        for i, env in enumerate(self.envs):
            start = self._offsets[i]
            if self._multiagent[i]:
                self._step_agents(env, start, self._agents[i], actions)
            else:
                self._step_single(env, start, actions[start])
        return self._obs, self._rewards, self._terminated, self._truncated, self._infos

    def _step_single(self, env: Any, actor: int, action: Any) -> None:
        obs, reward, terminated, truncated, info = env.step(self._convert_action(action))
        self._rewards[actor] = reward
        self._terminated[actor] = terminated
        self._truncated[actor] = truncated
        self._infos[actor] = info
        if terminated or truncated:
            obs, _ = env.reset()
        self._write_obs(actor, obs)

    def _step_agents(self, env: Any, start: int, num: int, actions: Any) -> None:
        env_actions = [self._convert_action(actions[start + agent]) for agent in range(num)]
        obs, rewards, terminated, truncated, infos = env.step(env_actions)
        end = start + num
        self._rewards[start:end] = rewards
        self._terminated[start:end] = terminated
        self._truncated[start:end] = truncated
        self._write_agents_infos(start, num, infos)
        self._write_agents_obs(start, num, obs)

    def render(self) -> Any:
        """The first env's frame (the others are statistically alike)."""
        return self.envs[0].render()

    def close(self) -> None:
        for env in self.envs:
            env.close()


def _flat(tensor: Tensor) -> Tensor:
    return tensor if tensor.dim() == 1 else tensor.reshape(-1)


def _numpy_rows(actions: Any) -> np.ndarray:
    if isinstance(actions, Tensor):
        return actions.detach().cpu().numpy()
    return np.asarray(actions)


class BatchedVecEnv:
    """A vectorised env (``num_agents`` actors stepped by one call) speaking torch tensors.

    ``reset``/``step`` return observations as a dict of tensors with a leading actor dimension (key ``"obs"`` for a
    non-dict observation space, as everywhere in the sampler), rewards as float32 and ``terminated``/``truncated``
    as bool tensors of shape ``[num_agents]``, and the infos unchanged. Numpy outputs become tensors without a copy
    (they share memory with the env's arrays: read them before the next step); tensors from GPU simulators pass
    through. ``step`` takes actions ``[num_agents, *action_shape]`` as a tensor (numpy arrays and lists work too) and
    gives the env numpy rows, or a tensor on ``actions_device`` when that is set (``--env_gpu_actions=True``).

    An env that is not natively vectorised (see the module docstring) is wrapped in a one-env
    :class:`SequentialVectorizeWrapper` first.
    """

    is_multiagent = True

    def __init__(self, env: Any, actions_device: torch.device | str | None = None) -> None:
        wrapped = isinstance(env, SequentialVectorizeWrapper) or is_natively_vectorized(env)
        self.env = env if wrapped else SequentialVectorizeWrapper([env])
        self.num_agents = get_multiagent_info(self.env)[1]
        self.observation_space = self.env.observation_space
        self.action_space = self.env.action_space
        self.render_mode = env_attribute(self.env, "render_mode", None)
        self.actions_device = None if actions_device is None else torch.device(actions_device)
        self._obs_keys = list(obs_space_dict(self.observation_space))
        self._dict_obs = isinstance(getattr(self.observation_space, "spaces", None), dict)
        self._action_shape = tuple(getattr(self.action_space, "shape", None) or ())
        self._views: dict[str, tuple[np.ndarray, Tensor]] = {}

    @property
    def envs(self) -> list:
        """The env objects whose state is this batch's state (for saving and restoring it)."""
        return list(getattr(self.env, "envs", [self.env]))

    def _tensor(self, key: str, value: Any, dtype: torch.dtype | None = None) -> Tensor:
        """``value`` as a tensor; an array reused by the env maps to the same cached tensor view every step."""
        if isinstance(value, Tensor):
            return value if dtype is None or value.dtype == dtype else value.to(dtype)
        if isinstance(value, np.ndarray):
            cached = self._views.get(key)
            if cached is not None and cached[0] is value:
                return cached[1]
            same_dtype = dtype is None or value.dtype == _NUMPY_OF.get(dtype)
            if same_dtype and value.flags.c_contiguous and value.dtype != object:
                tensor = torch.from_numpy(value)
                self._views[key] = (value, tensor)
                return tensor
        tensor = torch.as_tensor(np.asarray(value))  # stacks a list of per-agent values
        return tensor if dtype is None else tensor.to(dtype)

    def _obs_dict(self, obs: Any) -> dict[str, Any]:
        """Observations keyed as in the trajectory buffers; per-agent dicts are stacked into one dict of arrays."""
        if not self._dict_obs:
            return {"obs": obs}
        if isinstance(obs, dict):
            return {key: obs[key] for key in self._obs_keys}
        return {key: np.stack([agent_obs[key] for agent_obs in obs]) for key in self._obs_keys}

    def _env_actions(self, actions: Any) -> Any:
        if self.actions_device is not None:
            return torch.as_tensor(actions).to(self.actions_device)
        rows = _numpy_rows(actions)
        if self._action_shape and rows.shape[1:] != self._action_shape and rows.ndim > 1:
            rows = rows.reshape(len(rows), *self._action_shape)
        return rows

    def reset_arrays(self, seed: Any = None, options: dict | None = None) -> tuple[dict[str, Any], Any]:
        """Like :meth:`reset`, with the env's own arrays (or tensors) instead of tensors."""
        kwargs = {} if options is None else {"options": options}
        obs, infos = reset_env(self.env, seed, **kwargs)
        return self._obs_dict(obs), infos

    def step_arrays(self, actions: Any) -> tuple[dict[str, Any], Any, Any, Any, Any]:
        """Like :meth:`step`, with the env's own outputs instead of tensors (the sampler writes them with numpy)."""
        obs, rewards, terminated, truncated, infos = self.env.step(self._env_actions(actions))
        return self._obs_dict(obs), rewards, terminated, truncated, infos

    def reset(self, seed: Any = None, options: dict | None = None) -> tuple[dict[str, Tensor], Any]:
        obs, infos = self.reset_arrays(seed=seed, options=options)
        return self._tensors(obs), infos

    def step(self, actions: Any) -> tuple[dict[str, Tensor], Tensor, Tensor, Tensor, Any]:
        obs, rewards, terminated, truncated, infos = self.step_arrays(actions)
        return (
            self._tensors(obs),
            _flat(self._tensor("rewards", rewards, torch.float32)),
            _flat(self._tensor("terminated", terminated, torch.bool)),
            _flat(self._tensor("truncated", truncated, torch.bool)),
            infos,
        )

    def _tensors(self, obs: dict[str, Any]) -> dict[str, Tensor]:
        return {key: self._tensor(f"obs/{key}", value) for key, value in obs.items()}

    def render(self) -> Any:
        return self.env.render()

    def close(self) -> None:
        self.env.close()


def _split_env_configs(env_config: AttrDict | None, num_envs: int) -> list[AttrDict | None]:
    """One config per env: consecutive ``vector_index`` and ``env_id`` from the first env's, other keys kept."""
    if env_config is None:
        if num_envs == 1:
            return [None]
        env_config = AttrDict(worker_index=0, vector_index=0, env_id=0)
    return [
        AttrDict({**env_config, "vector_index": env_config.vector_index + i, "env_id": env_config.env_id + i})
        for i in range(num_envs)
    ]


def make_env_func_batched(
    cfg: Config, env_config: AttrDict | None, render_mode: str | None = None, num_envs: int = 1
) -> BatchedVecEnv:
    """Create ``num_envs`` envs of ``cfg.env`` and present them as one :class:`BatchedVecEnv`.

    ``env_config`` identifies the first env (``worker_index``, ``vector_index``, ``env_id``); env ``i`` gets
    ``vector_index + i`` and ``env_id + i``, as the non-batched sampler numbers them. The default of one env is
    what evaluation scripts want; the rollout worker passes a split's worth. A single natively vectorised env (see
    the module docstring) is used as it is; anything else goes through :class:`SequentialVectorizeWrapper`.
    """
    if num_envs < 1:
        raise ValueError(f"make_env_func_batched: num_envs={num_envs} must be >= 1")
    envs: list = []
    try:
        for config in _split_env_configs(env_config, num_envs):
            envs.append(create_env(cfg.env, cfg=cfg, env_config=config, render_mode=render_mode))
        native = len(envs) == 1 and is_natively_vectorized(envs[0])
        device = env_actions_device(cfg)
        if device is not None and not native:
            raise ValueError(
                f"--env_gpu_actions=True but env {cfg.env!r} is not natively vectorised alone in its split "
                f"({len(envs)} env(s) per split, num_agents={get_multiagent_info(envs[0])[1]}), so it is stepped "
                "one env at a time with numpy actions: drop --env_gpu_actions, or use a vectorised env with "
                "--num_envs_per_worker equal to --worker_num_splits"
            )
        return BatchedVecEnv(envs[0] if native else SequentialVectorizeWrapper(envs), actions_device=device)
    except BaseException:
        for env in envs:
            env.close()
        raise
