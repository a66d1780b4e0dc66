"""A DeepMind Lab level as a Gymnasium env: IMPALA's 9 discrete actions, CHW RGB frames, frame skip.

The simulator object (``deepmind_lab.Lab``) is made by a factory given to :class:`DmlabGymEnv`, so everything here
but the factory in :func:`make_lab` runs without DeepMind Lab (the tests use a scripted lab). At episode end the
info carries the level's raw score and, for DMLab-30 levels, its human-normalised score, under keys named after
the level, so multi-level runs (``dmlab_30``) keep each level's statistics apart.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

from sample_factory.envs.env_utils import MissingDependencyError
from sf_examples.dmlab.dmlab30 import DMLAB30_LEVELS, human_normalized_score
from sf_examples.dmlab.dmlab_level_cache import DmlabLevelCache
from sf_examples.dmlab.dmlab_stats import DmlabSummaryObserver, runner_stats_handler
from sf_examples.dmlab.dmlab_utils import string_to_hash_bucket

OBS_KEY = "RGB_INTERLEAVED"
# (look left/right pixels, look down/up, strafe left/right, move back/forward, fire, jump, crouch): IMPALA's set
ACTION_SET: tuple[tuple[int, ...], ...] = (
    (0, 0, 0, 1, 0, 0, 0),  # forward
    (0, 0, 0, -1, 0, 0, 0),  # backward
    (0, 0, -1, 0, 0, 0, 0),  # strafe left
    (0, 0, 1, 0, 0, 0, 0),  # strafe right
    (-20, 0, 0, 0, 0, 0, 0),  # look left
    (20, 0, 0, 0, 0, 0, 0),  # look right
    (-20, 0, 0, 1, 0, 0, 0),  # forward + look left
    (20, 0, 0, 1, 0, 0, 0),  # forward + look right
    (0, 0, 0, 0, 1, 0, 0),  # fire
)
# the set plus looking up/down, jumping and crouching, for levels where height matters
EXTENDED_ACTION_SET: tuple[tuple[int, ...], ...] = (
    *ACTION_SET,
    (0, -10, 0, 0, 0, 0, 0),  # look up
    (0, 10, 0, 0, 0, 0, 0),  # look down
    (0, 0, 0, 0, 0, 1, 0),  # jump
    (0, 0, 0, 0, 0, 0, 1),  # crouch
)
INSTR_KEY = "INSTR"
INSTRUCTION_WORDS = 16  # tokens of an instruction kept (the rest dropped); 0 pads a shorter one
INSTRUCTION_VOCABULARY = 1000  # hash buckets of the words; token 0 is padding, so words map to 1..999
BUILD_HINT = (
    "DeepMind Lab envs need the Python module 'deepmind_lab', which is not on PyPI: build its wheel from source "
    "(git clone https://github.com/google-deepmind/lab; cd lab; bazel build -c opt "
    "//python/pip_package:build_pip_package; ./bazel-bin/python/pip_package/build_pip_package /tmp/dmlab_pkg; "
    "pip install /tmp/dmlab_pkg/deepmind_lab-*.whl), see docs/dmlab.md"
)

LabFactory = Callable[[str], Any]  # level path -> a deepmind_lab.Lab-like object


def import_deepmind_lab() -> Any:
    """The ``deepmind_lab`` module, or MissingDependencyError with one line saying how to build it."""
    try:
        import deepmind_lab
    except ImportError as exc:
        raise MissingDependencyError(f"{BUILD_HINT} ({exc})") from exc
    return deepmind_lab


def make_lab(
    width: int,
    height: int,
    renderer: str,
    cache_dir: str | None,
    *,
    cache: DmlabLevelCache | None = None,
    with_instructions: bool = False,
    dataset_path: str | None = None,
    gpu_index: int | None = None,
    extra_cfg: dict[str, Any] | None = None,
) -> LabFactory:
    """A factory of real ``deepmind_lab.Lab`` objects (the only code here that needs the simulator).

    ``cache`` (else one over ``cache_dir``) keeps compiled maps; ``dataset_path`` (else ``$DMLAB_DATASET_PATH``)
    holds the images of the psychlab levels; ``gpu_index`` picks the GPU of the hardware renderer; ``extra_cfg``
    entries are added to the Lab's config as they are.
    """
    deepmind_lab = import_deepmind_lab()
    if cache is None and cache_dir:
        cache = DmlabLevelCache(cache_dir)
    config = {"width": str(width), "height": str(height), "logLevel": "WARN"}
    dataset_path = dataset_path or os.environ.get("DMLAB_DATASET_PATH")
    if dataset_path:  # brady_konkle_oliva2008 images of the psychlab levels
        config["datasetPath"] = dataset_path
    if gpu_index is not None:
        config["gpuDeviceIndex"] = str(gpu_index)
    config.update({key: str(value) for key, value in (extra_cfg or {}).items()})
    observations = [OBS_KEY, INSTR_KEY] if with_instructions else [OBS_KEY]

    def factory(level_path: str) -> Any:
        return deepmind_lab.Lab(level_path, observations, config=config, renderer=renderer, level_cache=cache)

    return factory


def instruction_tokens(text: str) -> np.ndarray:
    """An instruction as ``INSTRUCTION_WORDS`` hashed word ids (int32, 0-padded)."""
    tokens = np.zeros(INSTRUCTION_WORDS, dtype=np.int32)
    for i, word in enumerate(text.lower().split()[:INSTRUCTION_WORDS]):
        tokens[i] = 1 + string_to_hash_bucket(word, INSTRUCTION_VOCABULARY - 1)
    return tokens


class DmlabGymEnv(gym.Env):
    """One DeepMind Lab level; ``frameskip`` simulator frames per step (``info["num_frames"]`` says so).

    ``actions``: the action table (``ACTION_SET`` or ``EXTENDED_ACTION_SET``). ``with_instructions``: observations
    become ``{"obs": frame, "instr": hashed words}`` for language levels. ``fixed_seed``: every episode plays the
    same map (throughput measurements). ``level_cache``: episodes start on cached maps this policy has not played.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 15}

    def __init__(
        self, level: str, lab_factory: LabFactory, width: int = 96, height: int = 72, frameskip: int = 4,
        render_mode: str | None = None, *, actions: Sequence[tuple[int, ...]] = ACTION_SET,
        with_instructions: bool = False, fixed_seed: int | None = None, level_cache: DmlabLevelCache | None = None,
    ) -> None:  # fmt: skip
        self.level = level  # a DMLab-30 name, or any level path of DeepMind Lab
        self.level_path = DMLAB30_LEVELS[level].path if level in DMLAB30_LEVELS else level
        self.lab = lab_factory(self.level_path)
        self.frameskip = frameskip
        self.render_mode = render_mode
        self.with_instructions = with_instructions
        self.fixed_seed = fixed_seed
        self.level_cache = level_cache
        frame_space = gym.spaces.Box(0, 255, shape=(3, height, width), dtype=np.uint8)
        self.observation_space: gym.Space = frame_space
        if with_instructions:
            instr_space = gym.spaces.Box(0, INSTRUCTION_VOCABULARY - 1, (INSTRUCTION_WORDS,), dtype=np.int32)
            self.observation_space = gym.spaces.Dict({"obs": frame_space, "instr": instr_space})
        self.action_space = gym.spaces.Discrete(len(actions))
        self._actions = np.array(actions, dtype=np.intc)
        self._last_obs = np.zeros(frame_space.shape, dtype=np.uint8)
        self._last_instr = np.zeros(INSTRUCTION_WORDS, dtype=np.int32)
        self._score = 0.0

    def _observe(self) -> Any:
        if self.lab.is_running():
            observations = self.lab.observations()
            self._last_obs = np.ascontiguousarray(observations[OBS_KEY].transpose(2, 0, 1))
            if self.with_instructions:
                self._last_instr = instruction_tokens(str(observations.get(INSTR_KEY, "")))
        if self.with_instructions:
            return {"obs": self._last_obs, "instr": self._last_instr}
        return self._last_obs

    def _episode_seed(self) -> int:
        if self.fixed_seed is not None:
            return self.fixed_seed
        if self.level_cache is not None:
            rng = random.Random(int(self.np_random.integers(2**31 - 1)))
            cached = self.level_cache.get_unused_seed(self.level_path, rng)
            if cached is not None:
                return cached
        return int(self.np_random.integers(2**31 - 1))

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        lab_seed = self._episode_seed()
        if self.level_cache is not None:
            self.level_cache.begin_reset(self.level_path, lab_seed)
        self.lab.reset(seed=lab_seed)
        self._score = 0.0
        return self._observe(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        reward = float(self.lab.step(self._actions[int(action)], num_steps=self.frameskip))
        self._score += reward
        terminated = not self.lab.is_running()
        info: dict[str, Any] = {"num_frames": self.frameskip}
        if terminated:
            info["episode_extra_stats"] = self.episode_stats()
        return self._observe(), reward, terminated, False, info

    def episode_stats(self) -> dict[str, float]:
        """``score/<level>`` and, for DMLab-30 levels, ``hns/<level>`` (human-normalised) of the finished episode."""
        stats = {f"score/{self.level}": self._score}
        if self.level in DMLAB30_LEVELS:
            stats[f"hns/{self.level}"] = human_normalized_score(self.level, self._score)
        return stats

    def render(self) -> np.ndarray | None:
        return self._last_obs.transpose(1, 2, 0) if self.render_mode == "rgb_array" else None

    def close(self) -> None:
        self.lab.close()


# ---- the dmlab_* env names ------------------------------------------------------------------------------------------

MULTI_TASK_ENV = "dmlab_30"
BENCHMARK_ENV = "dmlab_benchmark"
BENCHMARK_LEVEL = "rooms_collect_good_objects_train"
LEVEL_NAMES = list(DMLAB30_LEVELS)
DMLAB_ENVS: tuple[str, ...] = (MULTI_TASK_ENV, BENCHMARK_ENV, *(f"dmlab_{name}" for name in DMLAB30_LEVELS))


class DmLabSpec:
    """One ``dmlab_*`` env: the level it plays, or the levels its envs share out (``dmlab_30``), and extra entries
    for the Lab's config."""

    def __init__(self, name: str, level: str | Sequence[str], extra_cfg: dict[str, Any] | None = None) -> None:
        self.name = name
        self.level = level
        self.extra_cfg = dict(extra_cfg or {})

    @property
    def levels(self) -> list[str]:
        return [self.level] if isinstance(self.level, str) else list(self.level)

    def __repr__(self) -> str:
        return f"DmLabSpec({self.name!r}, {self.level!r}, {self.extra_cfg!r})"


def dmlab_env_by_name(name: str) -> DmLabSpec:
    """The spec of a ``dmlab_*`` name; KeyError naming the valid names otherwise."""
    if name == MULTI_TASK_ENV:
        return DmLabSpec(name, tuple(LEVEL_NAMES))
    if name == BENCHMARK_ENV:
        return DmLabSpec(name, BENCHMARK_LEVEL)
    if name not in DMLAB_ENVS:
        raise KeyError(f"{name!r} is not a DeepMind Lab env; choose one of {sorted(DMLAB_ENVS)}")
    return DmLabSpec(name, name[len("dmlab_") :])


def list_all_levels_for_experiment(env_name: str) -> list[str]:
    """Every level the envs of ``env_name`` play (30 for ``dmlab_30``, else one)."""
    return dmlab_env_by_name(env_name).levels


def get_task_id(env_config: Any, spec: DmLabSpec, cfg: Any) -> int:
    """Which of the spec's levels an env instance plays: its env id, or with ``--dmlab_one_task_per_worker`` its
    worker index, modulo the number of levels. The env that only reports spaces (no env_config) plays level 0."""
    if env_config is None or env_config.env_id < 0:
        return 0
    per_worker = bool(getattr(cfg, "dmlab_one_task_per_worker", False))
    index = env_config.worker_index if per_worker else env_config.env_id
    return int(index) % len(spec.levels)


def task_id_to_level(task_id: int, spec: DmLabSpec) -> str:
    return spec.levels[task_id % len(spec.levels)]


def level_for(env_name: str, cfg: Any, env_config: Any) -> str:
    """The DMLab-30 level an env instance plays."""
    spec = dmlab_env_by_name(env_name)
    return task_id_to_level(get_task_id(env_config, spec, cfg), spec)


def get_dataset_path(cfg: Any) -> str | None:
    """Folder of the psychlab levels' images: ``--dmlab_datasets_path`` if the cfg has it, else
    ``$DMLAB_DATASET_PATH``; None when neither is set (the psychlab levels then fail to load)."""
    return getattr(cfg, "dmlab_datasets_path", None) or os.environ.get("DMLAB_DATASET_PATH") or None


def _policy_cache(
    caches: Sequence[DmlabLevelCache] | None, env_config: Any, cache_dir: str | None
) -> DmlabLevelCache | None:
    if caches:
        policy = getattr(env_config, "policy_id", 0) if env_config is not None else 0
        return caches[int(policy or 0) % len(caches)]
    return DmlabLevelCache(cache_dir) if cache_dir else None


def make_dmlab_env_impl(
    spec: DmLabSpec,
    cfg: Any = None,
    env_config: Any = None,
    render_mode: str | None = None,
    dmlab_level_caches_per_policy: Sequence[DmlabLevelCache] | None = None,
) -> DmlabGymEnv:
    """An env of ``spec`` for one env instance (raises MissingDependencyError without deepmind_lab)."""

    def get(name: str, default: Any) -> Any:
        return getattr(cfg, name, default) if cfg is not None else default

    width, height = int(get("dmlab_width", 96)), int(get("dmlab_height", 72))
    cache = _policy_cache(dmlab_level_caches_per_policy, env_config, get("dmlab_level_cache_path", "") or None)
    factory = make_lab(
        width, height, get("dmlab_renderer", "software"), None, cache=cache, dataset_path=get_dataset_path(cfg),
        extra_cfg=spec.extra_cfg,
    )  # fmt: skip
    level = task_id_to_level(get_task_id(env_config, spec, cfg), spec)
    frameskip = int(get("env_frameskip", 4))
    return DmlabGymEnv(
        level, factory, width=width, height=height, frameskip=frameskip, render_mode=render_mode, level_cache=cache
    )


def make_dmlab_env(
    env_name: str,
    cfg: Any = None,
    env_config: Any = None,
    render_mode: str | None = None,
    dmlab_level_caches_per_policy: Sequence[DmlabLevelCache] | None = None,
) -> DmlabGymEnv:
    """The ``make_env_func`` of every ``dmlab_*`` env (module level: worker processes unpickle it by reference)."""
    return make_dmlab_env_impl(dmlab_env_by_name(env_name), cfg, env_config, render_mode, dmlab_level_caches_per_policy)


def dmlab_extra_episodic_stats_processing(runner: Any, msg: dict, policy_id: int) -> None:
    """Keep the episode's human-normalised scores per level (the handler ``register_dmlab_stats`` installs)."""
    runner_stats_handler(runner)(runner, msg, policy_id)


def dmlab_extra_summaries(runner: Any, policy_id: int, env_steps: int, summary_writer: Any) -> None:
    """Write the capped mean human-normalised score of the levels seen so far."""
    DmlabSummaryObserver(runner_stats_handler(runner)).extra_summaries(runner, policy_id, env_steps, summary_writer)
