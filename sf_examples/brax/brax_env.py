"""A batch of Brax envs (one jax program stepping ``num_actors`` copies) as a natively vectorised env of this library.

The batched sampler (``--batched_sampling=True``) steps a multi-agent env whose agents are the copies of the batch:
actions in as one ``[num_actors, action_size]`` array (or tensor), observations ``[num_actors, obs_size]``, rewards,
``terminated`` and ``truncated`` ``[num_actors]`` out, every finished copy already showing the first observation of
its next episode. :class:`BraxEnv` compiles one jitted ``step`` that does all of that inside jax: the vmapped physics
step, the episode-length truncation, and a fresh random reset of the copies whose episode ended (skipped by
``lax.cond`` on steps where none did). Its outputs reach torch through DLPack, without a copy where the memory
layout allows it (:func:`jax_to_torch`), on the device jax computed them on.

jax and brax are imported only when an env is made (:func:`require_brax`), so this module imports without them.
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from sample_factory.envs.env_utils import MissingDependencyError

BRAX_INSTALL = 'pip install "sample-factory[brax]"'
# clamp_rew_obs: rewards and observations are clipped to this range
REW_OBS_CLAMP = 100.0


def require_brax() -> Any:
    """The ``brax.envs`` module, or MissingDependencyError whose one-line message names the packages and the fix.

    Before jax is first imported, GPU memory preallocation is turned off (``XLA_PYTHON_CLIENT_PREALLOCATE``, unless
    already set) so that jax and torch can share one GPU, and on a machine without a display MuJoCo's renderer is
    pointed at EGL (``MUJOCO_GL``, unless already set) for headless videos.
    """
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    if not os.environ.get("DISPLAY"):
        os.environ.setdefault("MUJOCO_GL", "egl")
    try:
        # mujoco's optional warp backend prints a line when warp is absent; brax warns that it is in maintenance
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import jax  # noqa: F401
            from brax import envs
    except ImportError as exc:
        raise MissingDependencyError(
            f"Brax envs need the Python packages 'jax' and 'brax' ({exc}). Install them with {BRAX_INSTALL} "
            "(jax's CPU build; for a GPU install jax's CUDA build as jax's documentation says)"
        ) from exc
    return envs


def brax_available() -> bool:
    """Whether jax and brax can be imported (tests skip on False)."""
    try:
        require_brax()
    except MissingDependencyError:
        return False
    return True


def jax_to_torch(tensor: Any) -> torch.Tensor:
    """A jax array as a torch tensor on the same device, sharing its memory through DLPack where possible.

    Torch tensors pass through. Where DLPack cannot share the buffer (a dtype or layout it does not carry), the
    values are copied through numpy (CPU arrays only).
    """
    if isinstance(tensor, torch.Tensor):
        return tensor
    try:
        return torch.from_dlpack(tensor)
    except (TypeError, RuntimeError, BufferError):
        return torch.from_numpy(np.array(tensor))


def torch_to_jax(tensor: Any) -> Any:
    """A torch tensor as a jax array, sharing its memory through DLPack where possible (a copy otherwise)."""
    import jax.numpy as jnp
    from jax import dlpack as jax_dlpack

    if not isinstance(tensor, torch.Tensor):
        return jnp.asarray(tensor)
    tensor = tensor.detach()
    try:
        return jax_dlpack.from_dlpack(tensor.contiguous())
    except (TypeError, RuntimeError, BufferError, ValueError):
        return jnp.asarray(tensor.cpu().numpy())


def _torch_friendly(array: np.ndarray) -> np.ndarray:
    """Unsigned integers (jax's random keys) as the signed type of the same width, bit for bit."""
    if array.dtype.kind == "u" and array.dtype.itemsize > 1:
        return array.view(f"i{array.dtype.itemsize}")
    return array


def _unwrapped_check(brax_env: Any) -> None:
    """BraxEnv batches and resets by itself: a brax env already batched or auto-resetting would do it twice."""
    from brax.envs.wrappers import training

    env = brax_env
    while env is not None:
        if isinstance(env, (training.VmapWrapper, training.AutoResetWrapper)):
            raise ValueError(
                f"BraxEnv got a brax env wrapped in {type(env).__name__}; pass the single, unwrapped env "
                "(brax.envs.get_environment(name)): BraxEnv vmaps it over num_actors copies and resets finished "
                "copies itself"
            )
        env = getattr(env, "env", None)


class BraxEnv(gym.Env):
    """``num_actors`` copies of ``brax_env`` stepped by one jitted call; each copy is one agent of this env.

    ``brax_env``: a single brax env (``brax.envs.get_environment(name, ...)``, not batched, no auto-reset).
    ``render_mode``: ``"rgb_array"`` (frames of copy 0 from ``render()``, ``render_res`` pixels square) or
    ``"human"`` (the same frames in an OpenCV window). ``clamp_actions``: clip actions to [-1, 1] before the
    physics sees them. ``clamp_rew_obs``: clip rewards and observations to [-100, 100]. ``episode_length``: steps
    after which an episode is truncated (``truncated=True``, unless it terminated on that very step). ``seed``: the
    key of the first reset when ``reset`` gets no seed.

    Outputs are torch tensors on jax's device, valid until the next ``step``/``reset``. Infos are empty dicts, so
    the sampler sums episode rewards itself.
    """

    is_multiagent = True
    metadata = {"render_modes": ["rgb_array", "human"], "render_fps": 30}

    def __init__(
        self,
        brax_env: Any,
        num_actors: int,
        render_mode: str | None = None,
        render_res: int = 200,
        clamp_actions: bool = False,
        clamp_rew_obs: bool = False,
        episode_length: int = 1000,
        seed: int | None = None,
    ) -> None:
        if num_actors < 1:
            raise ValueError(f"num_actors={num_actors} must be >= 1 (set it with --env_agents)")
        if episode_length < 1:
            raise ValueError(f"episode_length={episode_length} must be >= 1 (set it with --brax_episode_length)")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode={render_mode!r} is not one of None, 'rgb_array', 'human'")
        require_brax()
        _unwrapped_check(brax_env)
        self.brax_env = brax_env
        self.num_agents = int(num_actors)
        self.render_mode = render_mode
        self.render_res = int(render_res)
        self.clamp_actions = bool(clamp_actions)
        self.clamp_rew_obs = bool(clamp_rew_obs)
        self.episode_length = int(episode_length)
        self._seed = int(np.random.SeedSequence().entropy % 2**31) if seed is None else int(seed)
        obs_size, action_size = int(brax_env.observation_size), int(brax_env.action_size)
        self.observation_space = gym.spaces.Box(-np.inf, np.inf, shape=(obs_size,), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(action_size,), dtype=np.float32)
        self._infos: list[dict] = [{} for _ in range(self.num_agents)]  # nothing to report; allocated once
        self._reset_fn: Any = None
        self._step_fn: Any = None
        self._carry: tuple | None = None  # (brax state of all copies, steps in episode, rng key)
        self._renderer: Any = None

    # ---- the jitted programs ------------------------------------------------------------------------------------
    def _compile(self) -> None:
        import jax
        import jax.numpy as jnp

        env, n, length = self.brax_env, self.num_agents, self.episode_length
        clamp_actions, clamp_rew_obs = self.clamp_actions, self.clamp_rew_obs
        batch_reset, batch_step = jax.vmap(env.reset), jax.vmap(env.step)

        def strong(tree: Any) -> Any:
            # reset and step must return identically typed states, or the second step compiles the program again
            return jax.tree.map(lambda x: jax.lax.convert_element_type(x, x.dtype), tree)

        def fresh_states(key: Any) -> Any:
            return strong(batch_reset(jax.random.split(key, n)))

        def reset(key: Any) -> tuple:
            key, sub = jax.random.split(key)
            state = fresh_states(sub)
            return (state, jnp.zeros(n, jnp.int32), key), self._clamped_obs(state.obs, clamp_rew_obs)

        def step(carry: tuple, actions: Any) -> tuple:
            state, steps, key = carry
            if clamp_actions:
                actions = jnp.clip(actions, -1.0, 1.0)
            state = strong(batch_step(state, actions))
            steps = steps + 1
            terminated = state.done > 0.5
            truncated = (steps >= length) & ~terminated
            done = terminated | truncated
            reward = state.reward.astype(jnp.float32)  # of this step: the reset below zeroes the finished copies'
            if clamp_rew_obs:
                reward = jnp.clip(reward, -REW_OBS_CLAMP, REW_OBS_CLAMP)
            key, sub = jax.random.split(key)

            def reset_done(current: Any) -> Any:
                new = fresh_states(sub)

                def pick(a: Any, b: Any) -> Any:
                    return jnp.where(done.reshape((n,) + (1,) * (a.ndim - 1)), a, b)

                return jax.tree.map(pick, new, current)

            state = jax.lax.cond(done.any(), reset_done, lambda current: current, state)
            steps = jnp.where(done, 0, steps)
            obs = self._clamped_obs(state.obs, clamp_rew_obs)
            return (state, steps, key), (obs, reward, terminated, truncated)

        self._reset_fn, self._step_fn = jax.jit(reset), jax.jit(step)

    @staticmethod
    def _clamped_obs(obs: Any, clamp: bool) -> Any:
        import jax.numpy as jnp

        obs = obs.astype(jnp.float32)
        return jnp.clip(obs, -REW_OBS_CLAMP, REW_OBS_CLAMP) if clamp else obs

    # ---- the env API --------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[torch.Tensor, list[dict]]:
        """Reset every copy from random initial states drawn with ``seed`` (or the constructor's seed)."""
        del options
        import jax

        if self._reset_fn is None:
            self._compile()
        key = jax.random.PRNGKey(self._seed if seed is None else int(seed))
        self._carry, obs = self._reset_fn(key)
        if self.render_mode == "human":  # Gymnasium's contract: a window is drawn by reset() and step()
            self.render()
        return jax_to_torch(obs), self._infos

    def step(self, actions: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, list[dict]]:
        """Advance every copy; ``actions``: ``[num_actors, action_size]`` as a tensor, an array or a list of rows."""
        if self._carry is None:
            raise RuntimeError("BraxEnv.step() was called before reset()")
        self._carry, (obs, reward, terminated, truncated) = self._step_fn(self._carry, self._jax_actions(actions))
        if self.render_mode == "human":
            self.render()
        return jax_to_torch(obs), jax_to_torch(reward), jax_to_torch(terminated), jax_to_torch(truncated), self._infos

    def _jax_actions(self, actions: Any) -> Any:
        shape = (self.num_agents, self.action_space.shape[0])
        if isinstance(actions, torch.Tensor):
            return torch_to_jax(actions.to(torch.float32).reshape(shape))
        import jax.numpy as jnp

        rows = np.stack(actions) if isinstance(actions, (list, tuple)) else np.asarray(actions)
        if rows.size != shape[0] * shape[1]:
            raise ValueError(f"BraxEnv.step() got actions of shape {rows.shape}; expected {shape} (one row per copy)")
        return jnp.asarray(rows.reshape(shape), dtype=jnp.float32)

    def get_state(self) -> dict:
        """Every copy's simulation state, step counts and random key as tensors (exact resume in serial mode)."""
        if self._carry is None:
            raise RuntimeError("BraxEnv has no state before reset()")
        import jax

        leaves = jax.tree.leaves(self._carry)
        return {"leaves": [torch.from_numpy(_torch_friendly(np.array(leaf))) for leaf in leaves]}

    def set_state(self, state: dict) -> None:
        """Continue from a :meth:`get_state` of a BraxEnv built the same way (same task, ``num_actors``, backend)."""
        import jax
        import jax.numpy as jnp

        if self._carry is None:
            self.reset(seed=0)  # the structure of the state to fill
        leaves, treedef = jax.tree.flatten(self._carry)
        saved = state["leaves"]
        shapes_fit = len(saved) == len(leaves) and all(
            tuple(s.shape) == tuple(leaf.shape) for s, leaf in zip(saved, leaves, strict=False)
        )
        if not shapes_fit:
            raise ValueError(
                "the saved Brax state does not fit this env: it was saved from a different task, --env_agents or "
                "--brax_backend; resume with the run's own config"
            )
        restored = [jnp.asarray(s.numpy().view(leaf.dtype)) for s, leaf in zip(saved, leaves, strict=True)]
        self._carry = jax.tree.unflatten(treedef, restored)

    def pipeline_state(self, index: int = 0) -> Any:
        """The physics state (``brax.base.State``: ``q``, ``qd``, ``x``, ...) of copy ``index`` as numpy arrays."""
        if self._carry is None:
            raise RuntimeError("BraxEnv has no state before reset()")
        import jax

        return jax.tree.map(lambda x: np.asarray(x[index]), self._carry[0].pipeline_state)

    def render(self) -> np.ndarray | None:
        """Copy 0's current frame (``render_mode`` set), drawn by ``sf_examples.brax.brax_render.BraxRenderer``."""
        if self.render_mode is None:
            return None
        if self._renderer is None:
            from sf_examples.brax.brax_render import BraxRenderer

            self._renderer = BraxRenderer(self, self.render_mode, self.render_res)
        return self._renderer.render()

    def close(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
        self._carry = None
