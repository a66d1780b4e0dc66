"""What the system needs to know about an env before allocating buffers and models.

The runner creates one env, reads it into a small picklable ``EnvInfo`` and closes it; every process then gets the
EnvInfo. ``obtain_env_info`` does that in the calling process; ``obtain_env_info_in_a_separate_process`` does it in
a short-lived spawned child, for envs whose creation must not happen in the main process (simulators that start
threads or initialise CUDA, which would then be inherited or conflict with the workers').

``EnvInfo``'s fields follow Sample Factory 2's order, so scripts that build one positionally keep working.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import pickle
import signal
import traceback
from dataclasses import dataclass

import gymnasium as gym

from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_registry import global_env_registry, set_global_env_registry
from sample_factory.envs.env_utils import get_default_reward_shaping
from sample_factory.envs.spaces.layout import calc_num_actions, is_all_discrete
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config

# Layout version of EnvInfo: bumped whenever its fields change meaning, so an EnvInfo saved by an older version
# (e.g. a cached one) can be recognised as stale instead of misread.
ENV_INFO_PROTOCOL_VERSION = 1

# how long the parent waits for the env-info child before giving up; env creation may compile shaders or load maps
SEPARATE_PROCESS_TIMEOUT_S = 600.0


# what ``with_spaces`` leaves to be derived again from the new action space, or drops (one space per agent)
_PER_SPACE_FIELDS_UNSET = dict.fromkeys(("action_splits", "all_discrete", "agent_obs_spaces", "agent_action_spaces"))


def action_splits_of(action_space: gym.Space) -> list[int] | None:
    """For a ``Tuple`` action space, how many columns of a stored action row each part takes; None otherwise.

    A ``Discrete`` part takes one column, a ``Box`` part its size, a ``MultiDiscrete`` part one per component: the
    pieces the env runner cuts a flat action row into before handing the tuple to the env.
    """
    if isinstance(action_space, gym.spaces.Tuple):
        return [calc_num_actions(space) for space in action_space.spaces]
    return None


@dataclass
class EnvInfo:
    """Spaces, agent count and capabilities of an env (Sample Factory 2's field order).

    ``action_splits`` and ``all_discrete`` are derived from ``action_space`` when left as None.
    ``is_multiagent`` (ours) says the env speaks the multi-agent API (lists of per-agent values); it defaults
    to ``num_agents > 1``, and is set explicitly for multi-agent envs that happen to have one agent.

    ``agent_obs_spaces`` / ``agent_action_spaces`` (ours, last): one space per agent index, for a multi-agent env
    whose agents differ (e.g. a pursuer and an evader); None when every agent has ``obs_space``/``action_space``.
    When they are given, ``obs_space``/``action_space`` are agent 0's. Agents with equal spaces form one *space
    group*; each policy acts for the agents of one group (``algo.utils.policy_spaces``).
    """

    obs_space: gym.Space
    action_space: gym.Space
    num_agents: int = 1
    gpu_actions: bool = False
    gpu_observations: bool = False
    action_splits: list[int] | None = None
    all_discrete: bool | None = None
    frameskip: int = 1
    reward_shaping_scheme: dict | None = None
    env_info_protocol_version: int = ENV_INFO_PROTOCOL_VERSION
    is_multiagent: bool | None = None
    agent_obs_spaces: list[gym.Space] | None = None
    agent_action_spaces: list[gym.Space] | None = None

    def __post_init__(self) -> None:
        if int(self.num_agents) < 1:
            raise ValueError(f"EnvInfo(num_agents={self.num_agents}): an env has at least one agent")
        if self.action_splits is None:
            self.action_splits = action_splits_of(self.action_space)
        if self.all_discrete is None:
            self.all_discrete = is_all_discrete(self.action_space)
        if self.is_multiagent is None:
            self.is_multiagent = int(self.num_agents) > 1
        for name in ("agent_obs_spaces", "agent_action_spaces"):
            spaces = getattr(self, name)
            if spaces is not None and len(spaces) != int(self.num_agents):
                raise ValueError(f"EnvInfo({name}=...) has {len(spaces)} spaces for {self.num_agents} agents")

    @property
    def heterogeneous(self) -> bool:
        """Whether some agents have other spaces than agent 0."""
        return self.agent_obs_spaces is not None or self.agent_action_spaces is not None

    def agent_spaces(self, agent: int) -> tuple[gym.Space, gym.Space]:
        """The observation and action space of agent ``agent``."""
        obs = self.agent_obs_spaces[agent] if self.agent_obs_spaces is not None else self.obs_space
        act = self.agent_action_spaces[agent] if self.agent_action_spaces is not None else self.action_space
        return obs, act

    def space_groups(self) -> list[int]:
        """The space group of every agent: agents with equal spaces share one, numbered in order of first agent."""
        firsts: list[tuple[gym.Space, gym.Space]] = []
        groups = []
        for agent in range(int(self.num_agents)):
            spaces = self.agent_spaces(agent)
            if spaces not in firsts:
                firsts.append(spaces)
            groups.append(firsts.index(spaces))
        return groups

    def with_spaces(self, obs_space: gym.Space, action_space: gym.Space) -> EnvInfo:
        """This EnvInfo as seen by a policy acting for agents with these spaces (what its model and buffers use)."""
        return dataclasses.replace(self, obs_space=obs_space, action_space=action_space, **_PER_SPACE_FIELDS_UNSET)


_MISSING = object()
# gymnasium 0.x wrappers still forward a read of an attribute they lack to the env inside, with a deprecation
# warning (also from get_wrapper_attr, which asks hasattr first): each layer is then read without forwarding
_WRAPPERS_FORWARD_WITH_WARNING = int(gym.__version__.split(".")[0]) < 1


def _own_or_forwarded(layer: object, name: str) -> object:
    """``layer.name`` as ``layer`` itself resolves it (its wrapper-aware lookup first), or ``_MISSING``."""
    if _WRAPPERS_FORWARD_WITH_WARNING and isinstance(layer, gym.Wrapper):
        try:
            return object.__getattribute__(layer, name)  # the layer's own attribute; env_attribute walks inwards
        except AttributeError:
            return _MISSING
    get_wrapper_attr = getattr(layer, "get_wrapper_attr", None)
    if callable(get_wrapper_attr):
        try:
            return get_wrapper_attr(name)
        except AttributeError:
            pass  # an inner layer that is no gymnasium env ends gymnasium's lookup: the walk below goes on
    return getattr(layer, name, _MISSING)


def env_attribute(env: object, name: str, default: object = None) -> object:
    """Attribute ``name`` of ``env`` or of the first env inside it that has one, else ``default``.

    Gymnasium 1.x wrappers no longer forward attribute reads to the env they wrap, so an attribute declared by a
    user's env (``num_agents``, ``is_multiagent``) is not visible on the outer wrapper. Each layer is asked with
    ``get_wrapper_attr`` where it has one (gymnasium >= 0.29; older wrappers forward plain reads), then plainly; the
    walk then goes inwards through ``.env`` (any wrapper class, gymnasium's or not) and finally ``unwrapped``.
    """
    current, seen = env, set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        value = _own_or_forwarded(current, name)
        if value is not _MISSING:
            return value
        current = getattr(current, "env", None)
    unwrapped = getattr(env, "unwrapped", None)
    if unwrapped is not None and id(unwrapped) not in seen:
        value = getattr(unwrapped, name, _MISSING)
        if value is not _MISSING:
            return value
    return default


def get_multiagent_info(env: object) -> tuple[bool, int]:
    """``(is_multiagent, num_agents)`` of ``env``, read through any chain of wrappers around it.

    ``num_agents`` defaults to 1. An env is multi-agent when it declares ``is_multiagent = True`` (a multi-agent
    env may have a single agent) or has more than one agent.
    """
    num_agents = env_attribute(env, "num_agents", 1)
    try:
        num_agents = int(num_agents)
    except (TypeError, ValueError):
        num_agents = 0
    if num_agents < 1:
        raise ValueError(
            f"env {type(env).__name__} declares num_agents={env_attribute(env, 'num_agents')!r}: the multi-agent "
            "protocol needs a positive int (the number of agents the env steps in one call)"
        )
    return bool(env_attribute(env, "is_multiagent", False)) or num_agents > 1, num_agents


def is_multiagent_env(env: object) -> bool:
    """Whether ``env`` speaks the multi-agent protocol (per-agent lists), read through any chain of wrappers."""
    return get_multiagent_info(env)[0]


def agent_spaces_of(env, attribute: str, num_agents: int) -> list[gym.Space] | None:
    """A multi-agent env's per-agent spaces (``observation_spaces`` / ``action_spaces``: a sequence indexed by agent,
    or a mapping in agent order, as PettingZoo has), or None when it has none or they are all equal."""
    spaces = env_attribute(env, attribute, None)
    if spaces is None:
        return None
    spaces = list(spaces.values()) if isinstance(spaces, dict) else list(spaces)
    if len(spaces) != num_agents or not all(isinstance(space, gym.Space) for space in spaces):
        raise ValueError(
            f"env.{attribute} must hold one gymnasium space per agent ({num_agents}), got {len(spaces)} items: "
            "declare one space per agent index, or remove the attribute when all agents share one space"
        )
    return None if all(space == spaces[0] for space in spaces) else spaces


def extract_env_info(env, cfg: Config) -> EnvInfo:
    """Read ``env``'s spaces, agent count and reward shaping; GPU flags come from ``cfg`` (batched sampling only)."""
    batched = bool(cfg.batched_sampling)
    multiagent, num_agents = get_multiagent_info(env)
    agent_obs = agent_spaces_of(env, "observation_spaces", num_agents) if multiagent else None
    agent_act = agent_spaces_of(env, "action_spaces", num_agents) if multiagent else None
    obs_space = agent_obs[0] if agent_obs is not None else env.observation_space
    action_space = agent_act[0] if agent_act is not None else env.action_space
    return EnvInfo(
        obs_space=obs_space,
        action_space=action_space,
        num_agents=num_agents,
        gpu_actions=bool(cfg.env_gpu_actions) and batched,
        gpu_observations=bool(cfg.env_gpu_observations) and batched,
        action_splits=action_splits_of(action_space),
        all_discrete=is_all_discrete(action_space),
        frameskip=int(cfg.env_frameskip or 1),
        reward_shaping_scheme=get_default_reward_shaping(env),
        env_info_protocol_version=ENV_INFO_PROTOCOL_VERSION,
        is_multiagent=multiagent,
        agent_obs_spaces=agent_obs,
        agent_action_spaces=agent_act,
    )


def obtain_env_info(cfg: Config) -> EnvInfo:
    """Create one env in this process, read its EnvInfo, close it."""
    env = create_env(cfg.env, cfg=cfg, env_config=AttrDict(worker_index=-1, vector_index=-1, env_id=-1))
    try:
        return extract_env_info(env, cfg)
    finally:
        env.close()


class EnvInfoProcessError(RuntimeError):
    """The env-info child process died without an answer, or failed with an exception that cannot be sent back."""


def _env_info_child(cfg: Config, env_registry: dict, conn) -> None:
    """Entry point of the env-info child: the parent's env registry, then answer ``(ok, payload)`` once.

    Ignores SIGINT/SIGTERM, as every child of a run does: a signal to the run's process group is the runner's to act
    on, and the runner waits for this answer before it stops in order."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    set_global_env_registry(env_registry)
    try:
        answer = (True, obtain_env_info(cfg))
    except BaseException as exc:  # noqa: BLE001  (every failure must reach the parent, with its traceback)
        answer = (False, (_pickled_or_none(exc), type(exc).__name__, str(exc), traceback.format_exc()))
    conn.send(answer)
    conn.close()


def _pickled_or_none(exc: BaseException) -> bytes | None:
    """The exception pickled on its own, so a failure to pickle (or later to unpickle) it loses only the object."""
    try:
        return pickle.dumps(exc)
    except Exception:  # noqa: BLE001  (any pickling failure means: send the text only)
        return None


def _unpickled_or_none(data: bytes | None) -> BaseException | None:
    if data is None:
        return None
    try:
        return pickle.loads(data)
    except Exception:  # noqa: BLE001  (e.g. the class lives in a module only the child has imported)
        return None


def _reraise_child_failure(pickled_exc: bytes | None, type_name: str, message: str, child_tb: str) -> None:
    """Raise the child's exception in this process, its message extended with the child's traceback.

    The same exception type is raised when it could be sent back, so ``except UnknownEnvError`` and the like in the
    caller still work; otherwise an :class:`EnvInfoProcessError` carries the type name, message and traceback.
    """
    exc = _unpickled_or_none(pickled_exc)
    details = f"(raised while creating the env in a separate process; traceback there:)\n{child_tb}"
    if exc is None:
        raise EnvInfoProcessError(f"{type_name}: {message}\n{details}")
    if exc.args and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}\n{details}", *exc.args[1:])
    else:
        exc.add_note(details)
    raise exc


def obtain_env_info_in_a_separate_process(cfg: Config) -> EnvInfo:
    """Create one env in a spawned child process, read its EnvInfo there, close the env and return the EnvInfo.

    Keeps simulators, CUDA and env threads from ever starting in the calling process. The child gets this
    process's env registry, so envs registered by user code are found there too. An exception in the child is
    raised here, with the child's traceback in its message.
    """
    ctx = multiprocessing.get_context("spawn")
    parent_conn, child_conn = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_env_info_child, args=(cfg, global_env_registry(), child_conn), name="env_info")
    proc.start()
    child_conn.close()  # so that recv() sees EOF if the child dies without answering
    try:
        if not parent_conn.poll(SEPARATE_PROCESS_TIMEOUT_S):
            raise EnvInfoProcessError(
                f"The env-info process for --env={cfg.env} gave no answer in {SEPARATE_PROCESS_TIMEOUT_S:.0f} s; "
                f"check that creating the env does not hang"
            )
        ok, payload = parent_conn.recv()
    except EOFError:
        proc.join(timeout=5)
        raise EnvInfoProcessError(
            f"The env-info process for --env={cfg.env} died (exit code {proc.exitcode}) before reporting; "
            f"the env probably crashed the interpreter: create it in the main process to see where"
        ) from None
    finally:
        parent_conn.close()
        proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join()
    if not ok:
        _reraise_child_failure(*payload)
    return payload
