"""Sample Factory 2's names of the VizDoom family: action layouts, the env's SF2 constructor, specs and factories,
wrappers, rendering helpers, scripts and the multiplayer plumbing."""

from __future__ import annotations

import argparse
import functools
import queue
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.algo.utils.context import global_env_registry
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.vizdoom.doom import action_space as layouts
from sf_examples.vizdoom.doom.action_space import ButtonMapper, key_to_action_basic, num_buttons_of
from sf_examples.vizdoom.doom.doom_gym import VizdoomEnv, doom_lock_file, key_to_action_default
from sf_examples.vizdoom.doom.doom_params import add_doom_env_eval_args, default_doom_cfg
from sf_examples.vizdoom.doom.doom_play_demo import replay_demo
from sf_examples.vizdoom.doom.doom_render import concat_grid, cvt_doom_obs
from sf_examples.vizdoom.doom.doom_utils import (
    DoomSpec,
    doom_env_by_name,
    make_doom_env,
    make_doom_env_from_spec,
    make_doom_env_impl,
)
from sf_examples.vizdoom.doom.lifecycle import live_game_count
from sf_examples.vizdoom.doom.multiplayer.doom_multiagent import VizdoomEnvMultiplayer, find_available_port
from sf_examples.vizdoom.doom.multiplayer.doom_multiagent_wrapper import (
    MultiAgentEnvWorker,
    TaskType,
    retry_doom,
    safe_get,
    udp_port_num,
)
from sf_examples.vizdoom.doom.sample_env import sample
from sf_examples.vizdoom.doom.scripts.generate_bots import bot_param, fmt_bot
from sf_examples.vizdoom.doom.wrappers import DoomMeasurementsWrapper, DoomRewardShapingWrapper
from sf_examples.vizdoom.doom.wrappers.additional_input import DoomAdditionalInput
from sf_examples.vizdoom.doom.wrappers.bot_difficulty import BotDifficultyWrapper
from sf_examples.vizdoom.doom.wrappers.multiplayer_stats import standings_from_frags
from sf_examples.vizdoom.doom.wrappers.observation_space import SetResolutionWrapper
from sf_examples.vizdoom.doom.wrappers.reward_shaping import true_objective_frags, true_objective_winning_the_game
from sf_examples.vizdoom.doom.wrappers.step_human_input import StepHumanInput
from sf_examples.vizdoom.train_custom_vizdoom_env import CUSTOM_ENV, parse_custom_cfg, register_custom_doom_env


@pytest.fixture(autouse=True)
def no_game_left() -> None:
    yield
    assert live_game_count() == 0


# ---- action layouts -------------------------------------------------------------------------------------------------

LAYOUTS = [
    "doom_action_space", "doom_action_space_basic", "doom_action_space_continuous_no_weap",
    "doom_action_space_discrete", "doom_action_space_discrete_no_weap", "doom_action_space_discretized",
    "doom_action_space_discretized_no_weap", "doom_action_space_extended", "doom_action_space_full_discretized",
    "doom_turn_and_attack_only",
]  # fmt: skip


@pytest.mark.parametrize("name", LAYOUTS)
def test_every_layout_names_one_button_per_output(name: str) -> None:
    space = getattr(layouts, name)()
    assert isinstance(space, gym.spaces.Tuple) and len(space.doom_buttons) == num_buttons_of(space)
    buttons = ButtonMapper(space, len(space.doom_buttons))(space.sample())
    assert len(buttons) == len(space.doom_buttons)


def test_basic_layout_maps_parts_to_buttons() -> None:
    space = layouts.doom_action_space_basic()
    assert space.doom_buttons == ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")
    mapper = ButtonMapper(space, 3)
    assert mapper((2, 1)) == [0.0, 1.0, 1.0] and mapper((1, 0)) == [1.0, 0.0, 0.0]
    assert layouts.doom_action_space_full_discretized(with_use=True).doom_buttons.count("USE") == 1
    with pytest.raises(ValueError, match="drives 3 buttons but the scenario has 4"):
        ButtonMapper(space, 4)


def test_human_keys() -> None:
    assert key_to_action_basic("left") == (1, 0) and key_to_action_basic("space") == (0, 1)
    assert key_to_action_basic("q") is None
    assert key_to_action_default("w") == (1, 0, 0, 0, 0) and key_to_action_default("shift") == (0, 0, 0, 0, 1)
    assert doom_lock_file(4).endswith("_4.lockfile") and doom_lock_file(4) != doom_lock_file(8)


# ---- the env and its factories --------------------------------------------------------------------------------------


def test_sf2_constructor_with_a_layout_and_a_cfg_file(tmp_path: Path) -> None:
    env = VizdoomEnv(layouts.doom_action_space_basic(), "basic.cfg", skip_frames=4, record_to=str(tmp_path))
    try:
        assert env.spec_.name == "basic" and env.action_space == layouts.doom_action_space_basic()
        env.reset(seed=1)
        steps = 0
        while True:
            _, _, terminated, truncated, info = env.step((0, 1))
            steps += 1
            if terminated or truncated:
                break
        assert info["num_frames"] == 4
        env.reset()  # the recorded demo is written when the next episode starts
    finally:
        env.close()
    demo = tmp_path / "basic_ep0000.lmp"
    assert demo.is_file()
    replayed = replay_demo("doom_basic", str(demo))
    assert replayed["tics"] >= steps * 4 - 4


def test_env_needs_a_scenario() -> None:
    with pytest.raises(ValueError, match="config_file"):
        VizdoomEnv(layouts.doom_action_space_basic())


def test_specs_and_factories_take_sf2_parameters() -> None:
    spec = doom_env_by_name("doom_basic")
    assert spec.env_spec_file == "basic.cfg" and spec.reward_scaling == 0.01 and spec.config == "basic.cfg"
    assert doom_env_by_name("doom_duel").timeout_tics == 4 * 60 * 35
    cfg = default_doom_cfg(env="doom_basic")
    env = make_doom_env(env_name="doom_basic", cfg=cfg, env_config=None, render_mode=None)
    assert env.observation_space.shape == (3, 72, 128)
    env.close()
    custom = DoomSpec("doom_custom", "basic.cfg", layouts.doom_action_space_basic(), default_timeout=50)
    env = make_doom_env_from_spec(custom, "doom_custom", cfg, None, None)
    try:
        assert env.action_space == layouts.doom_action_space_basic()
        env.reset(seed=0)
        done, steps = False, 0
        while not done:
            _, _, terminated, truncated, _ = env.step((0, 0))
            done, steps = terminated or truncated, steps + 1
        assert truncated and steps == pytest.approx(50 / 4, abs=2), "default_timeout counts tics"
    finally:
        env.close()
    env = make_doom_env_impl(spec, cfg, skip_frames=2, custom_resolution="256x144")
    assert env.unwrapped.frameskip == 2 and env.unwrapped.observation_space.shape == (144, 256, 3)
    env.close()


def test_extra_wrappers_of_a_spec_are_applied() -> None:
    spec = DoomSpec("doom_custom", "basic.cfg", extra_wrappers=((gym.wrappers.TimeLimit, {"max_episode_steps": 3}),))
    env = make_doom_env_from_spec(spec, None, default_doom_cfg(env="doom_custom"))
    assert isinstance(env, gym.wrappers.TimeLimit)
    env.close()


def test_custom_env_script_registers_its_env(clean_context) -> None:
    cfg = parse_custom_cfg(["--experiment=x", "--custom_env_episode_len=77"])
    register_custom_doom_env(cfg.custom_env_episode_len)
    factory = global_env_registry()[CUSTOM_ENV]
    assert isinstance(factory, functools.partial) and factory.args[0].default_timeout == 77


def test_eval_args_add_record_to() -> None:
    parser = argparse.ArgumentParser()
    add_doom_env_eval_args(parser)
    assert parser.parse_args(["--record_to=/tmp/demos"]).record_to == "/tmp/demos"


def test_sample_env_plays_random_actions() -> None:
    result = sample("doom_basic", steps=20)
    assert result["frames"] == 80 and result["fps"] > 0


# ---- wrappers -------------------------------------------------------------------------------------------------------


def test_wrapper_package_keeps_its_names_and_adds_sf2_modules() -> None:
    assert issubclass(DoomAdditionalInput, DoomMeasurementsWrapper)
    env = DoomRewardShapingWrapper(
        VizdoomEnv(doom_env_by_name("doom_duel_bots")), reward_shaping_scheme={"frag": 2.0},
        true_objective_func=true_objective_winning_the_game,
    )  # fmt: skip
    assert env.reward_shaping == {"frag": 2.0} and env.true_objective_func is true_objective_winning_the_game


def test_true_objectives_and_standings() -> None:
    standings = standings_from_frags(5.0, [3.0, 7.0])
    assert standings["FINAL_PLACE"] == 2 and standings["LEADER_GAP"] == -2.0
    assert true_objective_winning_the_game(standings) == 0.0
    assert true_objective_winning_the_game(standings_from_frags(8.0, [3.0, 7.0])) == 1.0
    assert true_objective_winning_the_game(standings_from_frags(7.0, [7.0])) == 0.0, "a tie is not a win"
    assert true_objective_frags({"frag": 4.0, "FRAGCOUNT": 9.0}) == 4.0 and true_objective_frags({"FRAGCOUNT": 9}) == 9


def test_bot_difficulty_follows_results() -> None:
    wrapper = BotDifficultyWrapper(VizdoomEnv(doom_env_by_name("doom_duel_bots")), initial_difficulty=50)
    assert wrapper.env.unwrapped.options.bot_difficulty == 50
    assert wrapper.next_difficulty(standings_from_frags(5.0, [1.0])) == 60
    assert wrapper.next_difficulty(standings_from_frags(1.0, [5.0])) == 40
    assert wrapper.next_difficulty({}) == 50


def test_set_resolution_changes_the_observation_space() -> None:
    env = SetResolutionWrapper(VizdoomEnv(config_file="basic.cfg"), "320x240")
    assert env.observation_space.shape == (240, 320, 3)
    with pytest.raises(ValueError, match="one of ViZDoom's"):
        SetResolutionWrapper(VizdoomEnv(config_file="basic.cfg"), "333x222")


def test_human_input_without_a_display_names_the_problem(monkeypatch) -> None:
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="needs a display"):
        StepHumanInput(VizdoomEnv(config_file="basic.cfg"))


# ---- rendering and scripts ------------------------------------------------------------------------------------------


def test_render_helpers() -> None:
    chw = np.zeros((3, 4, 5), dtype=np.uint8)
    chw[0] = 200  # red
    image = cvt_doom_obs({"obs": chw})
    assert image.shape == (4, 5, 3) and image[0, 0].tolist() == [200, 0, 0]
    assert cvt_doom_obs(chw, "human")[0, 0].tolist() == [0, 0, 200], "BGR for OpenCV windows"
    grid = concat_grid([chw] * 3)
    assert grid.shape == (8, 10, 3) and grid[4:, 5:].max() == 0, "the empty fourth cell stays black"


def test_generate_bots() -> None:
    assert bot_param(30) == {"aiming": 30, "perfection": 30, "reaction": 30, "isp": 30}
    text = fmt_bot(70, 3)
    assert 'name "Bot3_d70"' in text and "\taiming 70\n" in text and text.startswith("{")
    with pytest.raises(ValueError, match="0..100"):
        bot_param(101)


# ---- multiplayer plumbing -------------------------------------------------------------------------------------------


def test_multiplayer_helpers() -> None:
    assert udp_port_num(AttrDict(env_id=7)) == udp_port_num(None) + 7
    port = find_available_port(45000, increment=7)
    assert port >= 45000 and (port - 45000) % 7 == 0
    q: queue.Queue = queue.Queue()
    q.put(1)
    assert safe_get(q, timeout=1) == 1
    with pytest.raises(TimeoutError, match="nothing came"):
        safe_get(q, timeout=0.01, msg="nothing came")
    calls = []

    @retry_doom(ValueError, num_attempts=3, sleep_time=0)
    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise ValueError("busy")
        return "started"

    assert flaky() == "started" and len(calls) == 3
    assert {t.value for t in TaskType} >= {"init", "reset", "step", "terminate"}


def test_multiplayer_player_roles() -> None:
    host = VizdoomEnvMultiplayer(None, "cig.cfg", 0, 2, 2, 1, port=45123)
    assert host.network.host and host.network.port == 45123 and host.num_bots == 1
    client = VizdoomEnvMultiplayer(None, "cig.cfg", 1, 2, 2, 1, port=45123)
    assert not client.network.host and client.num_bots == 0
    with pytest.raises(ValueError, match="port"):
        VizdoomEnvMultiplayer(None, "cig.cfg", 1, 2, 2, 0)


def test_worker_runs_a_player_in_a_thread() -> None:
    def make_player(player_id: int) -> gym.Env:
        return VizdoomEnv(layouts.doom_action_space_basic(), "basic.cfg", skip_frames=2)

    with pytest.raises(ValueError, match="use_multiprocessing=False"):
        MultiAgentEnvWorker(0, make_player, None, use_multiprocessing=True)
    worker = MultiAgentEnvWorker(0, make_player, None, reset_on_init=True)
    try:
        obs, _ = worker.init()
        assert obs.shape == (120, 160, 3)
        _, _, _, _, info = worker.step((0, 0))
        assert info["num_frames"] == 2 and worker.info()["action_space"] == layouts.doom_action_space_basic()
    finally:
        worker.close()
    assert not worker.thread.is_alive()
