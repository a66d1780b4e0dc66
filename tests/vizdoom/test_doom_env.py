"""VizDoom envs in process: spaces, frameskip, measurements, reward shaping, action mapping, clean shutdown."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest

from sample_factory.envs.env_utils import RewardShapingInterface, find_wrapper_interface
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.vizdoom.doom.action_space import DEATHMATCH_BUTTONS, TURN_BUTTON_INDEX, ButtonMapper
from sf_examples.vizdoom.doom.doom_gym import VizdoomEnv
from sf_examples.vizdoom.doom.doom_utils import FALLBACK_CFG, make_doom_env
from sf_examples.vizdoom.doom.game_setup import bots_file
from sf_examples.vizdoom.doom.game_variables import NUM_MEASUREMENTS
from sf_examples.vizdoom.doom.lifecycle import live_game_count, pick_port, register_game
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS, doom_spec
from sf_examples.vizdoom.doom.wrappers import DEFAULT_DEATHMATCH_SHAPING, DoomRewardShapingWrapper


def _cfg(**overrides: object) -> AttrDict:
    return AttrDict({**FALLBACK_CFG, "seed": None, **overrides})


def _env_config(env_id: int = 0) -> AttrDict:
    return AttrDict(worker_index=0, vector_index=env_id, env_id=env_id)


@pytest.fixture
def make_env(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Creates envs and always closes them; checks that no started game is left registered or in /dev/shm."""
    import sf_examples.vizdoom.doom.doom_gym as doom_gym

    envs: list[gym.Env] = []
    instance_ids: list[str] = []

    def recording_register(game: object) -> object:
        record = register_game(game)
        instance_ids.append(record.instance_id)
        return record

    monkeypatch.setattr(doom_gym, "register_game", recording_register)

    def factory(name: str, **overrides: object) -> gym.Env:
        env = make_doom_env(name, cfg=_cfg(**overrides), env_config=_env_config(len(envs)))
        envs.append(env)
        return env

    yield factory
    for env in envs:
        env.close()
    assert live_game_count() == 0
    leaked = [e for e in os.listdir("/dev/shm") if any(e.endswith(i) for i in instance_ids)]
    assert not leaked, f"shared memory of closed games left behind: {leaked}"


def _vizdoom_shm() -> set[str]:
    return {e for e in os.listdir("/dev/shm") if e.startswith("ViZDoom")}


# ---- specs and spaces ----------------------------------------------------------------------------------------------


def test_every_env_has_a_shipped_scenario() -> None:
    from sf_examples.vizdoom.doom.scenarios import scenario_file

    assert len(DOOM_SPECS) == 14
    for spec in DOOM_SPECS.values():
        assert os.path.isfile(scenario_file(spec.config)), spec.name
        assert spec.wad is None or os.path.isfile(scenario_file(spec.wad)), spec.name


def test_spaces_are_known_before_any_engine_starts(make_env) -> None:
    env = make_env("doom_basic")
    assert env.observation_space == gym.spaces.Box(0, 255, (3, 72, 128), np.uint8)
    assert env.action_space == gym.spaces.Discrete(4)  # no-op + MOVE_LEFT, MOVE_RIGHT, ATTACK
    assert live_game_count() == 0


def test_resolution_flags(make_env) -> None:
    env = make_env("doom_basic", res_w=64, res_h=48, wide_aspect_ratio=True)
    assert env.observation_space.shape == (3, 48, 64)
    assert env.unwrapped.observation_space.shape == (144, 256, 3)  # 16:9 native screen
    obs, _ = env.reset(seed=0)
    assert obs.shape == (3, 48, 64) and obs.dtype == np.uint8 and obs.max() > 0


def test_framestack_stacks_chw_frames(make_env) -> None:
    env = make_env("doom_basic", res_w=64, res_h=48, env_framestack=3)
    assert env.observation_space == gym.spaces.Box(0, 255, (9, 48, 64), np.uint8)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (9, 48, 64)
    np.testing.assert_array_equal(obs[0:3], obs[6:9])  # after reset the stack holds copies of the first frame


def test_hwc_pixel_format_keeps_channels_last(make_env) -> None:
    env = make_env("doom_basic", res_w=64, res_h=48, pixel_format="HWC")
    assert env.observation_space.shape == (48, 64, 3)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (48, 64, 3)


def test_framestack_with_hwc_is_refused() -> None:
    from sample_factory.cfg.validation import ConfigError

    with pytest.raises(ConfigError, match="--env_framestack=2 stacks frames along the channel axis of CHW images"):
        make_doom_env("doom_basic", cfg=_cfg(env_framestack=2, pixel_format="HWC"), env_config=_env_config())


@pytest.mark.parametrize("frameskip", [1, 4])
def test_step_reports_frameskip_and_advances_that_many_tics(make_env, frameskip: int) -> None:
    env = make_env("doom_basic", env_frameskip=frameskip)
    env.reset(seed=0)
    game = env.unwrapped.game
    before = game.get_episode_time()
    obs, reward, terminated, truncated, info = env.step(0)
    assert info["num_frames"] == frameskip
    assert game.get_episode_time() - before == frameskip
    # basic.cfg: living reward -1 per tic, scaled by 0.01
    assert reward == pytest.approx(-0.01 * frameskip)
    assert obs.shape == (3, 72, 128) and not terminated and not truncated


def test_basic_episode_times_out_as_truncation(make_env) -> None:
    env = make_env("doom_basic", timelimit=0.02)  # 42 tics
    env.reset(seed=0)
    steps, done = 0, False
    while not done:
        _, _, terminated, truncated, _ = env.step(0)  # never shoots: only the time limit can end it
        done = terminated or truncated
        steps += 1
    assert truncated and not terminated
    assert steps == pytest.approx(42 / 4, abs=1)


# ---- deathmatch: measurements, shaping, bots -----------------------------------------------------------------------


def test_deathmatch_observation_has_measurements(make_env) -> None:
    env = make_env("doom_duel_bots", num_bots=0)
    assert env.observation_space["measurements"].shape == (NUM_MEASUREMENTS,)
    assert isinstance(env.action_space, gym.spaces.Tuple)
    obs, _ = env.reset(seed=0)
    assert obs["obs"].shape == (3, 72, 128)
    measurements = obs["measurements"]
    assert measurements.dtype == np.float32 and measurements.shape == (NUM_MEASUREMENTS,)
    assert measurements[0] == pytest.approx(1.0)  # full health: 100 / 100
    assert measurements[-8:].sum() == pytest.approx(1.0)  # one-hot selected weapon slot


def test_reward_shaping_interface_and_objective(make_env) -> None:
    env = make_env("doom_deathmatch_bots", num_bots=1, timelimit=0.02)
    shaping = find_wrapper_interface(env, RewardShapingInterface)
    assert isinstance(shaping, DoomRewardShapingWrapper)
    assert shaping.get_default_reward_shaping() == DEFAULT_DEATHMATCH_SHAPING
    shaping.set_reward_shaping({**DEFAULT_DEATHMATCH_SHAPING, "frag": 2.0}, 0)
    assert shaping.reward_shaping["frag"] == 2.0
    env.reset(seed=0)
    info: dict = {}
    for _ in range(100):
        _, _, terminated, truncated, info = env.step(env.action_space.sample())
        if terminated or truncated:
            break
    assert truncated, "a 42-tic deathmatch must end by its time limit"
    assert info["true_objective"] == info["episode_extra_stats"]["frag"]
    assert {"frag", "death", "damage_dealt", "shaped_reward"} <= set(info["episode_extra_stats"])


def test_shaping_deltas_reward_frags_and_ignore_respawn_refills() -> None:
    env = DoomRewardShapingWrapper(VizdoomEnv(doom_spec("doom_duel_bots")))  # never started: only the variables
    index = env.unwrapped.variable_index
    previous = np.zeros(len(index))
    previous[index["HEALTH"]] = 40.0
    current = previous.copy()
    current[index["FRAGCOUNT"]] = 1.0
    current[index["HEALTH"]] = 65.0  # picked up a medikit
    deltas = env.deltas(previous, current)
    assert deltas["frag"] == 1.0 and deltas["health_pickup"] == 25.0
    respawned = current.copy()
    respawned[index["DEATHCOUNT"]] = 1.0
    respawned[index["HEALTH"]] = 100.0
    assert env.deltas(current, respawned)["health_pickup"] == 0.0


def test_bot_difficulty_file(tmp_path) -> None:
    text = open(bots_file(37)).read()
    assert "aiming      37" in text and "reaction    37" in text
    with pytest.raises(ValueError, match="start_bot_difficulty"):
        bots_file(101)


# ---- actions ---------------------------------------------------------------------------------------------------------


def test_human_players_are_refused_naming_the_flag() -> None:
    """Sample Factory 2's --num_humans is accepted; 0 (its default) is the only count these envs can run."""
    from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg

    assert parse_vizdoom_cfg(["--env=doom_basic", "--experiment=x", "--num_humans=0"]).num_humans == 0
    with pytest.raises(ValueError, match="--num_humans=1: human players cannot join"):
        make_doom_env("doom_duel", cfg=_cfg(num_humans=1), env_config=_env_config())


def test_single_button_actions() -> None:
    mapper = ButtonMapper(gym.spaces.Discrete(4), num_buttons=3)
    assert mapper(0) == [0.0, 0.0, 0.0]
    assert mapper(np.int64(3)) == [0.0, 0.0, 1.0]
    with pytest.raises(ValueError):
        mapper(4)


def test_deathmatch_actions_accept_degrees_and_indices() -> None:
    space = make_doom_env("doom_benchmark").action_space
    mapper = ButtonMapper(space, len(DEATHMATCH_BUTTONS))
    from_sampler = mapper((1, 2, 1, 0, 3, 15.0))  # the sampler converts Discretized actions to degrees
    assert from_sampler[DEATHMATCH_BUTTONS.index("MOVE_FORWARD")] == 1.0
    assert from_sampler[DEATHMATCH_BUTTONS.index("MOVE_LEFT")] == 1.0
    assert from_sampler[DEATHMATCH_BUTTONS.index("ATTACK")] == 1.0
    assert from_sampler[DEATHMATCH_BUTTONS.index("SELECT_WEAPON3")] == 1.0
    assert from_sampler[TURN_BUTTON_INDEX] == 15.0
    from_sample = mapper((0, 0, 0, 0, 0, np.int64(20)))  # space.sample() gives the raw index
    assert from_sample[TURN_BUTTON_INDEX] == pytest.approx(30.0)
    assert mapper.without_deltas(from_sampler)[TURN_BUTTON_INDEX] == 0.0


# ---- networking and shutdown -----------------------------------------------------------------------------------------


def test_pick_port_skips_a_busy_port() -> None:
    free = pick_port(30000, env_id=7)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.bind(("127.0.0.1", free))
        moved = pick_port(30000, env_id=7)
    assert moved != free and (moved - free) % 1000 == 0


def test_self_play_match_steps_all_agents(make_env) -> None:
    env = make_env("doom_duel", timelimit=0.02)
    assert env.num_agents == 2 and env.is_multiagent
    obs, infos = env.reset(seed=1)
    assert len(obs) == 2 and len(infos) == 2
    ends = 0
    for _ in range(30):
        obs, rewards, terminated, truncated, infos = env.step([env.action_space.sample() for _ in range(2)])
        assert len(rewards) == 2 and all(info["num_frames"] == 4 for info in infos)
        ends += all(truncated)
    assert ends >= 2, "42-tic episodes end for both agents together and the match restarts"
    assert obs[1]["measurements"].shape == (NUM_MEASUREMENTS,)


def test_close_removes_engine_and_shared_memory(make_env) -> None:
    shm_before = _vizdoom_shm()
    env = make_env("doom_basic")
    env.reset(seed=0)
    assert live_game_count() == 1 and _vizdoom_shm() - shm_before
    env.close()
    env.close()  # idempotent
    assert live_game_count() == 0 and not (_vizdoom_shm() - shm_before)


def test_crashed_engine_is_cleaned_up(make_env) -> None:
    from sf_examples.vizdoom.doom.lifecycle import _live_games

    shm_before = _vizdoom_shm()
    env = make_env("doom_basic")
    env.reset(seed=0)
    (record,) = _live_games.values()
    assert record.engine_pid is not None
    os.kill(record.engine_pid, 9)
    env.close()
    assert not (_vizdoom_shm() - shm_before)
    with pytest.raises(ProcessLookupError):
        os.kill(record.engine_pid, 0)


@pytest.mark.parametrize("env_name", ["doom_basic", "doom_duel"])
def test_engines_die_with_a_process_that_skips_cleanup(env_name: str) -> None:
    """``os._exit`` skips close(), finalisers and atexit: the watchdog must still remove engines and segments."""
    from vizdoom_helpers import REPO_ROOT, run_python

    code = (
        "import os\n"
        "from sf_examples.vizdoom.doom.doom_utils import make_doom_env\n"
        f"env = make_doom_env({env_name!r})\n"
        "env.reset(seed=0)\n"
        "print('engines started', flush=True)\n"
        "os._exit(3)\n"
    )
    scratch_existed = (REPO_ROOT / "_vizdoom").exists()
    result = run_python("-c", code, timeout=60)  # asserts: no process of the run and no ViZDoom segment remain
    assert result.returncode == 3 and "engines started" in result.output, result.explain()
    assert scratch_existed or not (REPO_ROOT / "_vizdoom").exists(), "the engine's scratch folder was left behind"


def test_the_scratch_folder_exists_before_the_engine_starts(make_env, tmp_path, monkeypatch) -> None:
    """An engine makes ``_vizdoom`` in the working directory when it finds none; two engines doing so at once can
    collide and kill their process, so the folder must already be there when ``init()`` starts one."""
    import sf_examples.vizdoom.doom.doom_gym as doom_gym
    from sf_examples.vizdoom.doom import lifecycle

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(lifecycle, "_scratch_made", None)
    there_before_init = []

    def prepare_and_look() -> None:
        lifecycle.prepare_engine_start()
        there_before_init.append((tmp_path / "_vizdoom").is_dir())

    monkeypatch.setattr(doom_gym, "prepare_engine_start", prepare_and_look)
    make_env("doom_basic").reset(seed=0)
    assert there_before_init == [True]
    assert lifecycle.made_scratch_dir() == str(tmp_path / "_vizdoom")  # so this process removes it as it exits
    lifecycle.remove_scratch_dir()
    assert not (tmp_path / "_vizdoom").exists()


def test_only_the_process_that_made_the_scratch_folder_removes_it(tmp_path) -> None:
    """Players started at once in a fresh folder all start; the one that made ``_vizdoom`` removes it when it is gone
    (its watchdog: a forked player leaves through ``os._exit``), and a folder that was there before stays."""
    from vizdoom_helpers import run_python

    code = (
        "import multiprocessing as mp, os, sys\n"
        "from sf_examples.vizdoom.doom.doom_utils import make_doom_env\n"
        "def play(barrier):\n"
        "    env = make_doom_env('doom_basic')\n"
        "    barrier.wait()\n"
        "    env.reset(seed=0)\n"
        "    env.close()\n"
        "for folder in sys.argv[1:]:\n"
        "    os.chdir(folder)\n"
        "    ctx = mp.get_context('fork')\n"
        "    barrier = ctx.Barrier(3)\n"
        "    players = [ctx.Process(target=play, args=(barrier,)) for _ in range(3)]\n"
        "    for p in players: p.start()\n"
        "    for p in players: p.join()\n"
        "    print(os.path.basename(folder), [p.exitcode for p in players], flush=True)\n"
    )
    fresh, used = tmp_path / "fresh", tmp_path / "used"
    fresh.mkdir()
    (used / "_vizdoom").mkdir(parents=True)
    result = run_python("-c", code, str(fresh), str(used), timeout=120)  # asserts: no process or segment is left
    assert result.returncode == 0, result.explain()
    assert "fresh [0, 0, 0]" in result.output and "used [0, 0, 0]" in result.output, result.explain()
    assert not (fresh / "_vizdoom").exists(), "the scratch folder made by a player was left behind"
    assert (used / "_vizdoom").is_dir(), "a scratch folder that was there before was removed"


def test_engines_still_starting_die_with_their_process() -> None:
    """A process that dies while its engines start (a duel host blocks in ``init()`` until the client joined) must
    not leave them behind: the watchdog exists before ``init()`` and finds engines by their config folder. Here no
    engine is ever registered (``register_game`` blocks), so only that second route can clean them up."""
    from vizdoom_helpers import run_python

    code = (
        "import os, threading, time\n"
        "from sf_examples.vizdoom.doom import doom_gym, lifecycle\n"
        "from sf_examples.vizdoom.doom.doom_utils import make_doom_env\n"
        "doom_gym.register_game = lambda game: threading.Event().wait()\n"
        "env = make_doom_env('doom_duel')\n"
        "threading.Thread(target=env.reset, kwargs={'seed': 0}, daemon=True).start()\n"
        "def engines():\n"
        "    found = []\n"
        "    for p in os.listdir('/proc'):\n"
        "        try:\n"
        "            args = open(f'/proc/{p}/cmdline', 'rb').read().decode(errors='replace')\n"
        "        except OSError:\n"
        "            continue\n"
        "        if p.isdigit() and '-config\\0' + lifecycle.temp_dir() + '/' in args:\n"
        "            found.append(p)\n"
        "    return found\n"
        "deadline = time.monotonic() + 45\n"
        "while len(engines()) < 2 and time.monotonic() < deadline:\n"
        "    time.sleep(0.05)\n"
        "print('engines', len(engines()), 'registered', lifecycle.live_game_count(), flush=True)\n"
        "os._exit(3)\n"
    )
    result = run_python("-c", code, timeout=60)  # asserts: no process of the run and no ViZDoom segment remain
    assert result.returncode == 3 and "engines 2 registered 0" in result.output, result.explain()
