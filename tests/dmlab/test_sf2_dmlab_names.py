"""Sample Factory 2's names of the DeepMind Lab family, checked without the simulator (a scripted lab)."""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch

from sample_factory.algo.utils.context import global_env_registry, reset_global_context
from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.dmlab.dmlab30 import DMLAB30_LEVELS, dmlab30_level_name_to_level, dmlab30_num_envs
from sf_examples.dmlab.dmlab_env import (
    EXTENDED_ACTION_SET,
    OBS_KEY,
    DmLabSpec,
    dmlab_env_by_name,
    get_dataset_path,
    get_task_id,
    list_all_levels_for_experiment,
    make_dmlab_env,
    task_id_to_level,
)
from sf_examples.dmlab.dmlab_gym import BENCHMARK_SEED, DmlabGymEnv, dmlab_level_to_level_name
from sf_examples.dmlab.dmlab_level_cache import (
    DmlabLevelCache,
    filename_to_level,
    level_to_filename,
    make_dmlab_caches,
    read_seeds_file,
)
from sf_examples.dmlab.dmlab_model import DmlabEncoder, make_dmlab_encoder
from sf_examples.dmlab.dmlab_params import DMLAB_DEFAULTS, add_dmlab_env_args, dmlab_override_defaults
from sf_examples.dmlab.dmlab_utils import dmlab_available, string_to_hash_bucket
from sf_examples.dmlab.train_dmlab import DmlabEnvWithCache, parse_dmlab_cfg, register_dmlab_components
from sf_examples.dmlab.wrappers.reward_shaping import DmlabRewardShapingWrapper, clip_reward

WATERMAZE = "contributed/dmlab30/rooms_watermaze"


class Lab:
    """DeepMind Lab's Python API, scripted: reward 1 per frame, an instruction, ``frames`` frames an episode."""

    def __init__(self, level_path: str, frames: int = 8) -> None:
        self.level_path, self.frames, self.t, self.seeds = level_path, frames, 0, []

    def reset(self, seed=None):
        self.t = 0
        self.seeds.append(seed)

    def is_running(self) -> bool:
        return self.t < self.frames

    def observations(self) -> dict:
        return {OBS_KEY: np.full((72, 96, 3), self.t, dtype=np.uint8), "INSTR": "Pick the red ball"}

    def step(self, action, num_steps=1) -> float:
        self.t += num_steps
        return -2.0 if action[3] < 0 else float(num_steps)

    def close(self):
        pass


def test_dmlab30_level_names() -> None:
    assert dmlab30_level_name_to_level("rooms_watermaze") == WATERMAZE
    assert dmlab_level_to_level_name(WATERMAZE) == "rooms_watermaze"
    assert dmlab30_num_envs() == 30
    with pytest.raises(KeyError, match="rooms_watermaze"):
        dmlab30_level_name_to_level("rooms_watermase")


def test_specs_levels_and_task_ids() -> None:
    spec = dmlab_env_by_name("dmlab_30")
    assert isinstance(spec, DmLabSpec) and len(spec.levels) == 30
    assert list_all_levels_for_experiment("dmlab_rooms_watermaze") == ["rooms_watermaze"]
    assert task_id_to_level(31, spec) == list(DMLAB30_LEVELS)[1]
    assert get_task_id(AttrDict(env_id=33, worker_index=2), spec, AttrDict()) == 3
    assert get_task_id(AttrDict(env_id=33, worker_index=2), spec, AttrDict(dmlab_one_task_per_worker=True)) == 2
    assert get_task_id(None, spec, None) == 0
    assert get_dataset_path(AttrDict(dmlab_datasets_path="/data/brady")) == "/data/brady"
    with pytest.raises(KeyError, match="dmlab_30"):
        dmlab_env_by_name("dmlab_31")


def test_creating_an_env_without_the_simulator_names_deepmind_lab() -> None:
    if dmlab_available():
        pytest.skip("deepmind_lab is installed here")
    with pytest.raises(MissingDependencyError, match="deepmind_lab"):
        make_dmlab_env("dmlab_rooms_watermaze", AttrDict(dmlab_level_cache_path=""), None, None)
    with pytest.raises(MissingDependencyError, match="deepmind_lab"):
        DmlabGymEnv(0, WATERMAZE)


def test_sf2_constructor_maps_onto_the_env() -> None:
    env = DmlabGymEnv(
        0, WATERMAZE, action_repeat=2, res_w=96, res_h=72, benchmark_mode=True, with_instructions=True,
        extended_action_set=True, lab_factory=Lab,
    )  # fmt: skip
    assert env.level == "rooms_watermaze" and env.action_space.n == len(EXTENDED_ACTION_SET)
    obs, _ = env.reset(seed=3)
    assert set(obs) == {"obs", "instr"} and env.observation_space.contains(obs)
    words = obs["instr"][obs["instr"] > 0]
    assert len(words) == 4 and words[0] == 1 + string_to_hash_bucket("pick", 999)
    env.reset(seed=4)
    assert env.lab.seeds == [BENCHMARK_SEED, BENCHMARK_SEED], "benchmark mode replays one map"
    _, reward, *_ = env.step(0)
    assert reward == 2.0


def test_string_to_hash_bucket_is_stable_and_in_range() -> None:
    assert string_to_hash_bucket("ball", 1000) == string_to_hash_bucket("ball", 1000)
    assert all(0 <= string_to_hash_bucket(w, 7) < 7 for w in ("a", "b", "red", "ball"))
    with pytest.raises(ValueError, match="vocabulary_size"):
        string_to_hash_bucket("x", 0)


def test_level_cache_records_seeds_and_serves_unplayed_ones(tmp_path: Path) -> None:
    assert filename_to_level(level_to_filename(WATERMAZE)) == WATERMAZE
    caches = make_dmlab_caches(str(tmp_path / "exp"), [WATERMAZE], 2, str(tmp_path / "cache"))
    first, second = caches
    compiled = tmp_path / "map.pk3"
    compiled.write_bytes(b"map")
    for seed, key in ((11, "k11"), (12, "k12")):
        first.begin_reset(WATERMAZE, seed)
        first.write(key, str(compiled))
    assert read_seeds_file(first.seeds_path(WATERMAZE), has_keys=True) == [11, 12]
    fresh = DmlabLevelCache(str(tmp_path / "cache"), str(tmp_path / "exp"), [WATERMAZE], policy_idx=0)
    assert fresh.cached_seeds[WATERMAZE] == [11, 12]
    played = {fresh.get_unused_seed(WATERMAZE), fresh.get_unused_seed(WATERMAZE)}
    assert played == {11, 12} and fresh.get_unused_seed(WATERMAZE) is None
    assert second.get_unused_seed(WATERMAZE) in (11, 12), "each policy records its own played seeds"
    with pytest.raises(ValueError, match="seed"):
        (tmp_path / "bad.seeds").write_text("1 2 3\n")
        read_seeds_file(str(tmp_path / "bad.seeds"), has_keys=True)


def test_env_starts_episodes_on_cached_maps(tmp_path: Path) -> None:
    cache = DmlabLevelCache(str(tmp_path / "cache"), str(tmp_path / "exp"), [WATERMAZE])
    cache.cached_seeds[WATERMAZE] = [77]
    env = DmlabGymEnv(0, WATERMAZE, dmlab_level_caches_per_policy=[cache], lab_factory=Lab)
    env.reset(seed=0)
    env.reset(seed=1)
    assert env.lab.seeds[0] == 77 and env.lab.seeds[1] != 77


def test_reward_shaping_clips_asymmetrically() -> None:
    env = DmlabRewardShapingWrapper(DmlabGymEnv(0, WATERMAZE, action_repeat=1, lab_factory=Lab))
    env.reset(seed=0)
    _, reward, _, _, info = env.step(0)
    assert reward == pytest.approx(5 * np.tanh(1.0)) and info["raw_reward"] == 1.0
    _, reward, _, _, info = env.step(1)  # backward: the scripted lab penalises it
    assert reward == pytest.approx(0.3 * np.tanh(-2.0)) and clip_reward(0.0) == 0.0


def test_encoder_embeds_instructions() -> None:
    cfg = parse_dmlab_cfg(["--env=dmlab_rooms_watermaze", "--experiment=x"])
    env = DmlabGymEnv(0, WATERMAZE, with_instructions=True, lab_factory=Lab)
    encoder = make_dmlab_encoder(cfg, env.observation_space)
    assert isinstance(encoder, DmlabEncoder)
    obs, _ = env.reset(seed=0)
    batch = {key: torch.as_tensor(value)[None].float() for key, value in obs.items()}
    out = encoder(batch)
    assert out.shape == (1, encoder.get_out_size())
    plain = make_dmlab_encoder(cfg, env.observation_space["obs"])
    assert encoder.get_out_size() == plain.get_out_size() + 32


def test_flag_hooks_take_the_parser_first() -> None:
    parser = argparse.ArgumentParser()
    add_dmlab_env_args(parser)
    dmlab_override_defaults(parser)
    assert parser.parse_args([]).dmlab_width == 96
    assert parser.get_default("rnn_type") == DMLAB_DEFAULTS["rnn_type"]


def test_components_register_envs_with_caches(tmp_path: Path) -> None:
    reset_global_context()
    try:
        caches = [DmlabLevelCache(str(tmp_path))]
        register_dmlab_components(caches)
        factory = global_env_registry()["dmlab_30"]
        assert isinstance(factory, DmlabEnvWithCache) and factory.level_caches == caches
    finally:
        reset_global_context()


def test_scripted_env_is_a_gym_env() -> None:
    assert isinstance(DmlabGymEnv(0, WATERMAZE, lab_factory=Lab), gym.Env)


def test_generic_tools_reach_the_family_hooks() -> None:
    """``sample_factory.eval`` and the throughput tool register and parse through the family table."""
    from sample_factory.cfg.arguments import parse_sf_args
    from sample_factory.envs.env_families import add_family_args, register_family_env
    from sample_factory.envs.env_utils import MissingDependencyError
    from sf_examples.families import register_example_families

    register_example_families()
    parser, _ = parse_sf_args(["--env=dmlab_30"], evaluation=True)
    add_family_args(parser, "dmlab_30", evaluation=True)
    assert parser.get_default("rnn_type") == "lstm"
    if not dmlab_available():
        with pytest.raises(MissingDependencyError, match="deepmind_lab"):
            register_family_env("dmlab_30")
