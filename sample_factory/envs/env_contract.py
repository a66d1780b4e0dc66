"""Checks that an env keeps the Gymnasium contract: what ``reset`` and ``step`` return, against its own spaces.

Without them a wrong return surfaces far from its cause: a 4-tuple from ``step`` is "not enough values to unpack"
inside the env runner, an observation of the wrong shape a broadcasting error while writing the trajectory buffers,
a NaN reward a NaN loss thousands of steps later. The env runner checks each env's first reset and its first
:data:`CHECKED_STEPS` steps (and again after an env is recreated): a contract is kept or broken from the start, and
checking only then keeps the per-step cost at one attribute test. Non-finite rewards and float observations can
appear at any time (a physics blow-up), so those are checked once per rollout on the whole trajectory
(:func:`non_finite_problem`).

Two things are not errors, as in Sample Factory 2: an observation array of another numeric dtype than its space's
is cast as it is copied into the trajectory buffers (one warning per env and key in each process), and an env (or
outermost wrapper) whose ``reset`` takes no ``seed`` is reset without one (:func:`reset_env`).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces

from sample_factory.envs.contract_errors import EnvContractError
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.utils.logging_setup import log

# steps of each (new) env whose return values are checked in full
CHECKED_STEPS = 2


class EnvContract:
    """Validates the returns of one kind of env (``env_name``, its observation space and agent count)."""

    def __init__(
        self,
        env_name: str,
        obs_space: spaces.Space,
        num_agents: int,
        multiagent: bool,
        agent_obs_spaces: list[spaces.Space] | None = None,
    ) -> None:
        """``agent_obs_spaces``: one observation space per agent when the agents differ (else all have
        ``obs_space``)."""
        self.env_name = env_name
        self.obs_spaces = obs_space_dict(obs_space)
        self.plain_obs = not isinstance(getattr(obs_space, "spaces", None), dict)
        self.num_agents = num_agents
        self.multiagent = multiagent
        per_agent = agent_obs_spaces or [obs_space] * num_agents
        self._agent_obs = [(obs_space_dict(s), not isinstance(getattr(s, "spaces", None), dict)) for s in per_agent]

    def _fail(self, call: str, what: str, expected: str) -> EnvContractError:
        return EnvContractError(
            f"env {self.env_name!r}: {call} {what}, but {expected}. This is a bug of the env (or of one of its "
            "wrappers): fix it there; recreating the env cannot help, so the run stops"
        )

    def reset_result(self, result: Any) -> tuple[Any, Any]:
        """``(obs, info)`` of a ``reset`` call, checked."""
        if not isinstance(result, tuple) or len(result) != 2:
            raise self._fail(
                "reset()", f"returned {_describe(result)}", "Gymnasium's reset() returns a pair (obs, info): "
                "return `obs, {}` (an old Gym env returning only obs needs a wrapper)",
            )  # fmt: skip
        obs, info = result
        self._check_infos("reset()", info)
        self._check_agents_obs("reset()", obs)
        return result

    def step_result(self, result: Any) -> tuple[Any, Any, Any, Any, Any]:
        """``(obs, reward, terminated, truncated, info)`` of a ``step`` call, checked."""
        if not isinstance(result, tuple) or len(result) != 5:
            got = f"{len(result)} values" if isinstance(result, (tuple, list)) else _describe(result)
            raise self._fail(
                "step()", f"returned {got}", "Gymnasium's step() returns 5: (obs, reward, terminated, truncated, "
                "info): an old Gym env returning (obs, reward, done, info) should return "
                "`obs, reward, done, False, info`",
            )  # fmt: skip
        obs, reward, terminated, truncated, info = result
        self._check_infos("step()", info)
        for name, value in (("terminated", terminated), ("truncated", truncated)):
            for agent, flag in self._per_agent("step()", name, value):
                if not _is_bool(flag):
                    raise self._fail("step()", f"returned {name}{agent}={flag!r}", "it must be a bool")
        for agent, r in self._per_agent("step()", "reward", reward):
            problem = _reward_problem(r)
            if problem:
                raise self._fail("step()", f"returned reward{agent}={_short(r)} ({problem})", "a reward is one "
                                 "finite real number (a Python or numpy float/int)")  # fmt: skip
        self._check_agents_obs("step()", obs)
        return result

    # ---- per-agent structure
    def _per_agent(self, call: str, name: str, value: Any) -> list[tuple[str, Any]]:
        """(label, value) per agent: the value itself for a single-agent env, its items for a multi-agent one."""
        if not self.multiagent:
            return [("", value)]
        if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != self.num_agents:
            raise self._fail(call, f"returned {name}={_short(value)}",
                             f"a multi-agent env returns a list of {self.num_agents} (one per agent)")  # fmt: skip
        return [(f"[agent {i}]", item) for i, item in enumerate(value)]

    def _check_infos(self, call: str, info: Any) -> None:
        infos = info if self.multiagent and isinstance(info, (list, tuple)) else [info]
        for item in infos:
            if not isinstance(item, Mapping):
                raise self._fail(call, f"returned info={_short(item)}", "info must be a dict (return {} for none)")

    def _check_agents_obs(self, call: str, obs: Any) -> None:
        if self.multiagent and not (self.plain_obs is False and isinstance(obs, Mapping)):
            for index, (agent, item) in enumerate(self._per_agent(call, "obs", obs)):
                self._check_obs(call, item, agent, index)
        elif not self.multiagent:
            self._check_obs(call, obs, "")

    def _check_obs(self, call: str, obs: Any, agent: str, index: int = 0) -> None:
        obs_spaces, plain = self._agent_obs[index]
        if plain:
            self._check_entry(call, "obs", obs, agent, obs_spaces["obs"], plain)
            return
        if not isinstance(obs, Mapping):
            raise self._fail(
                call,
                f"returned obs{agent}={_short(obs)}",
                f"the observation space is a Dict: return a dict with keys {list(obs_spaces)}",
            )
        for key in obs_spaces:
            if key not in obs:
                raise self._fail(
                    call,
                    f"returned an observation{agent} without key {key!r} (it has {list(obs)})",
                    f"the observation space declares {list(obs_spaces)}",
                )
            self._check_entry(call, key, obs[key], agent, obs_spaces[key], plain)

    def _check_entry(self, call: str, key: str, value: Any, agent: str, space: spaces.Space, plain: bool) -> None:
        label = "observation" if plain else f"observation {key!r}"
        try:
            array = np.asarray(value)
        except Exception:  # noqa: BLE001  (ragged lists and odd objects: described below)
            array = None
        if array is None or array.dtype == object or array.shape != tuple(space.shape or ()):
            shape = "no array" if array is None else f"shape {array.shape} dtype {array.dtype}"
            raise self._fail(call, f"returned {label}{agent} with {shape}",
                             f"its space {space} needs shape {space.shape} dtype {space.dtype}")  # fmt: skip
        if space.dtype is not None and array.dtype != space.dtype:
            if array.dtype.kind not in _NUMERIC_KINDS or np.dtype(space.dtype).kind not in _NUMERIC_KINDS:
                raise self._fail(call, f"returned {label}{agent} of dtype {array.dtype}",
                                 f"its space {space} has dtype {space.dtype}, which cannot hold those values: "
                                 f"return {space.dtype} or declare the space with dtype={array.dtype}")  # fmt: skip
            self._warn_cast(call, key, label, array.dtype, space)
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            raise self._fail(call, f"returned {label}{agent} with non-finite values ({_first_bad(array)})",
                             "observations must be finite (NaN/inf poison the observation normaliser): "
                             "fix the simulation or clip/np.nan_to_num them in a wrapper")  # fmt: skip

    def _warn_cast(self, call: str, key: str, label: str, dtype: np.dtype, space: spaces.Space) -> None:
        """Numbers of another dtype are cast into the buffers as they are copied there (as Sample Factory 2 does);
        said once per env and key in each process."""
        if (self.env_name, key) in _warned_casts:
            return
        _warned_casts.add((self.env_name, key))
        log.warning(
            "env %r: %s returned %s of dtype %s, but its space has dtype %s: the values are cast to %s as they are "
            "copied into the trajectory buffers. Return %s, or declare the space with dtype=%s, to keep them as they "
            "are",
            self.env_name, call, label, dtype, space.dtype, space.dtype, space.dtype, dtype,
        )  # fmt: skip


# observation dtypes cast into a buffer of another numeric dtype (bool, signed and unsigned ints, floats)
_NUMERIC_KINDS = "biuf"
_warned_casts: set[tuple[str, str]] = set()  # (env name, observation key) already warned about in this process


def _is_bool(value: Any) -> bool:
    return isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1))


def _reward_problem(reward: Any) -> str | None:
    if isinstance(reward, (bool, np.bool_)) or reward is None or isinstance(reward, (str, bytes)):
        return f"a {type(reward).__name__}"
    if isinstance(reward, (int, float, np.integer, np.floating)):
        return None if np.isfinite(reward) else "not finite"
    array = np.asarray(reward) if isinstance(reward, np.ndarray) else None
    if array is None or array.dtype.kind not in "iuf":
        return f"a {type(reward).__name__}"
    if array.ndim != 0:
        return f"an array of shape {array.shape}; return float(reward)"
    return None if np.isfinite(array).all() else "not finite"


def _first_bad(array: np.ndarray) -> str:
    flat = array.reshape(-1)
    index = int(np.flatnonzero(~np.isfinite(flat))[0])
    return f"{flat[index]} at flat index {index}"


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} (a bare observation?)"
    return f"a {type(value).__name__} ({_short(value)})"


def non_finite_problem(values: np.ndarray) -> tuple[int, int] | None:
    """``(row, step)`` of the first NaN/inf in a ``[rows, steps, ...]`` float array, None when all are finite."""
    bad = ~np.isfinite(values)
    if not bad.any():
        return None
    row, step = np.argwhere(bad.reshape(bad.shape[0], bad.shape[1], -1).any(axis=2))[0]
    return int(row), int(step)


class RolloutFiniteCheck:
    """Once per rollout: every reward and every float observation of the finished trajectories must be finite.

    ``traj`` holds numpy views of the trajectory buffers; integer observations (images) are never looked at.
    Checking a whole rollout at once costs one vectorised pass over data the learner copies anyway, instead of a
    test per env step.
    """

    def __init__(self, env_name: str, traj: dict, num_agents: int) -> None:
        self.env_name = env_name
        self.traj = traj
        self.num_agents = num_agents
        self.float_obs = [key for key, array in traj["obs"].items() if array.dtype.kind == "f"]

    def check(self, slots: np.ndarray, rollout: int, where: str, actors: slice | np.ndarray = slice(None)) -> None:
        """Raise :class:`EnvContractError` naming the env (``where``: worker and split) of a non-finite value.

        ``actors``: the split's actors that ``slots`` belong to (those of one space group), for the message."""
        found = non_finite_problem(self.traj["rewards"][slots, :rollout])
        if found is not None:
            self._raise(found, "reward", self.traj["rewards"][slots[found[0]], found[1]], where, actors)
        for key in self.float_obs:
            found = non_finite_problem(self.traj["obs"][key][slots])
            if found is not None:
                self._raise(found, f"observation {key!r}", "NaN/inf", where, actors)

    def _raise(self, found: tuple[int, int], what: str, value: Any, where: str, actors: slice | np.ndarray) -> None:
        position, step = found
        actor = position if isinstance(actors, slice) else int(actors[position])
        env = f"env {actor // self.num_agents}" + (f" agent {actor % self.num_agents}" if self.num_agents > 1 else "")
        raise EnvContractError(
            f"env {self.env_name!r} ({where}, {env}) returned a non-finite {what} ({value}) at step {step} of a "
            f"rollout: rewards and float observations must be finite (one NaN makes every loss NaN). Fix the "
            "simulation, or clip them / np.nan_to_num them in an env wrapper; recreating the env cannot help, so "
            "the run stops"
        )


_seed_taken: dict[object, bool] = {}  # the function of an env's reset -> whether it takes a seed


def reset_takes_seed(env: Any) -> bool:
    """Whether ``env.reset`` takes a ``seed`` keyword (a ``seed`` parameter or ``**kwargs``); looked up once per
    reset function. Gymnasium's envs do; a project's wrapper written as ``def reset(self):`` does not."""
    reset = env.reset
    function = getattr(reset, "__func__", reset)
    try:
        return _seed_taken[function]
    except (KeyError, TypeError):
        pass
    try:
        parameters = inspect.signature(reset).parameters.values()
    except (TypeError, ValueError):  # no introspectable signature (a C extension): assume Gymnasium's
        takes = True
    else:
        takes = any(
            p.kind == inspect.Parameter.VAR_KEYWORD
            or (p.name == "seed" and p.kind != inspect.Parameter.POSITIONAL_ONLY)
            for p in parameters
        )
    try:
        _seed_taken[function] = takes
    except TypeError:  # unhashable callable: looked up again next time
        pass
    return takes


_warned_seedless: set[str] = set()  # env types whose unseeded resets were reported in this process


def reset_env(env: Any, seed: int | None = None, **kwargs: Any) -> Any:
    """``env.reset(seed=seed, **kwargs)``, or ``env.reset(**kwargs)`` when its ``reset`` takes no seed.

    Sample Factory 2 resets envs without a seed in places where this package passes ``--seed``; envs and wrappers
    written for it may define ``reset(self)``, also below a wrapper whose ``reset(**kwargs)`` passes the seed on
    (the ``TypeError`` naming ``seed`` then says so). Such an env keeps its own randomness (said once per env type).
    """
    below = ""
    if reset_takes_seed(env):
        try:
            return env.reset(seed=seed, **kwargs)
        except TypeError as exc:
            if "unexpected keyword argument 'seed'" not in str(exc):
                raise
            below = " (below it, a wrapper's does)"
    name = type(env).__qualname__
    if seed is not None and name not in _warned_seedless:
        _warned_seedless.add(name)
        log.info("%s.reset() takes no seed%s: it is reset without one (--seed does not seed it)", name, below)
    return env.reset(**kwargs)


def reset_inner(env: Any, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
    """What a library wrapper calls to reset the env it wraps: the seed and options only where given and accepted,
    so a user's env or wrapper whose ``reset(self)`` takes neither still works below the library's wrappers."""
    return reset_env(env, seed, **({} if options is None else {"options": options}))
