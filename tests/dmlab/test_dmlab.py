"""The DeepMind Lab family without the simulator: levels and scores, the level cache, the env wrapper on a scripted
lab, level assignment, the episodic stats handler and observer, and the early failure without ``deepmind_lab``."""

from __future__ import annotations

import importlib.util
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from sf_run import run_module

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.misc import EPISODIC
from sf_examples.dmlab.dmlab30 import DMLAB30_LEVELS, capped_mean_hns, human_normalized_score
from sf_examples.dmlab.dmlab_env import ACTION_SET, OBS_KEY, DmlabGymEnv
from sf_examples.dmlab.dmlab_level_cache import DmlabLevelCache
from sf_examples.dmlab.dmlab_params import DMLAB_ENVS, level_for
from sf_examples.dmlab.dmlab_stats import DmlabStatsHandler, DmlabSummaryObserver


def test_dmlab30_has_30_levels_with_reference_scores() -> None:
    assert len(DMLAB30_LEVELS) == 30 and len(DMLAB_ENVS) == 32
    for name, level in DMLAB30_LEVELS.items():
        assert level.human > level.random, name
        assert human_normalized_score(name, level.human) == pytest.approx(100.0)
        assert human_normalized_score(name, level.random) == pytest.approx(0.0)
    assert human_normalized_score("rooms_watermaze", 29.05) == pytest.approx(50.0)  # halfway: (54.0 + 4.1) / 2


def test_capped_mean_caps_each_level_at_100() -> None:
    assert capped_mean_hns({"a": 250.0, "b": 50.0}) == pytest.approx(75.0)
    with pytest.raises(ValueError):
        capped_mean_hns({})


def test_level_cache_round_trip(tmp_path: Path) -> None:
    cache = DmlabLevelCache(str(tmp_path / "cache"))
    compiled, fetched = tmp_path / "map.pk3", tmp_path / "fetched.pk3"
    compiled.write_bytes(b"compiled map")
    assert not cache.fetch("level_key", str(fetched)), "a miss makes DeepMind Lab compile the map"
    cache.write("level_key", str(compiled))
    assert cache.fetch("level_key", str(fetched)) and fetched.read_bytes() == b"compiled map"
    compiled.write_bytes(b"other")
    cache.write("level_key", str(compiled))
    assert (tmp_path / "cache" / "level_key").read_bytes() == b"compiled map", "existing entries are kept"
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["level_key"], "no temporary file left"
    with pytest.raises(ValueError, match="plain file name"):
        cache.fetch("../escape", str(fetched))


class ScriptedLab:
    """DeepMind Lab's Python API, scripted: each frame gives reward 1; the episode lasts ``frames`` frames."""

    def __init__(self, level_path: str, frames: int = 12) -> None:
        self.level_path, self.frames, self.t = level_path, frames, 0
        self.actions: list[np.ndarray] = []
        self.steps: list[int] = []

    def reset(self, seed=None):
        self.t = 0

    def is_running(self) -> bool:
        return self.t < self.frames

    def observations(self) -> dict:
        return {OBS_KEY: np.full((72, 96, 3), self.t, dtype=np.uint8)}

    def step(self, action, num_steps=1) -> float:
        self.actions.append(action)
        self.steps.append(num_steps)
        done = min(num_steps, self.frames - self.t)
        self.t += done
        return float(done)

    def close(self):
        pass


def test_env_wrapper_steps_frames_and_reports_level_scores() -> None:
    env = DmlabGymEnv("rooms_watermaze", ScriptedLab, frameskip=4, render_mode="rgb_array")
    assert env.lab.level_path == "contributed/dmlab30/rooms_watermaze"
    obs, _ = env.reset(seed=1)
    assert obs.shape == (3, 72, 96) and env.observation_space.contains(obs)
    for _ in range(2):
        obs, reward, terminated, truncated, info = env.step(7)
        assert reward == 4.0 and not terminated and info == {"num_frames": 4}
    assert env.lab.actions[-1].tolist() == list(ACTION_SET[7]) and env.lab.steps == [4, 4]
    assert obs[0, 0, 0] == 8 and env.render().shape == (72, 96, 3)
    obs, reward, terminated, truncated, info = env.step(0)
    assert terminated
    assert info["episode_extra_stats"] == {
        "score/rooms_watermaze": 12.0,
        "hns/rooms_watermaze": pytest.approx(human_normalized_score("rooms_watermaze", 12.0)),
    }


def test_dmlab_30_spreads_levels_over_envs() -> None:
    levels = list(DMLAB30_LEVELS)
    cfg = AttrDict(dmlab_one_task_per_worker=False)
    seen = {level_for("dmlab_30", cfg, AttrDict(worker_index=i // 4, env_id=i)) for i in range(30)}
    assert seen == set(levels)
    per_worker = AttrDict(dmlab_one_task_per_worker=True)
    assert {level_for("dmlab_30", per_worker, AttrDict(worker_index=3, env_id=i)) for i in range(8)} == {levels[3]}
    assert level_for("dmlab_benchmark", cfg, None) == "rooms_collect_good_objects_train"
    assert level_for("dmlab_rooms_watermaze", cfg, None) == "rooms_watermaze"


class RecordingWriter:
    def __init__(self) -> None:
        self.scalars: dict[str, float] = {}

    def add_scalar(self, tag: str, value: float, step: int) -> None:
        self.scalars[tag] = value


def test_stats_handler_and_observer_write_the_capped_mean() -> None:
    handler = DmlabStatsHandler()
    episodes = [{"hns/a": 300.0, "score/a": 1.0}, {"hns/b": 20.0}, {"hns/b": 40.0}, {}]
    for extra in episodes:
        handler(None, {EPISODIC: {"reward": 0.0, "episode_extra_stats": extra}, "policy_id": 0}, 0)
    assert handler.hns[0] == {"a": deque([300.0]), "b": deque([20.0, 40.0])}
    writer = RecordingWriter()
    DmlabSummaryObserver(handler).extra_summaries(None, 0, 1000, writer)
    assert writer.scalars == {"dmlab/mean_capped_hns": pytest.approx(65.0), "dmlab/levels_with_episodes": 2}
    empty = RecordingWriter()
    DmlabSummaryObserver(handler).extra_summaries(None, 1, 1000, empty)
    assert empty.scalars == {}, "a policy without DMLab-30 episodes gets no summary"


@pytest.mark.skipif(importlib.util.find_spec("deepmind_lab") is not None, reason="deepmind_lab is installed")
def test_without_deepmind_lab_training_fails_at_once_with_one_message(tmp_path: Path) -> None:
    args = ["--env=dmlab_benchmark", f"--train_dir={tmp_path / 'runs'}", "--experiment=x"]
    result = run_module("sf_examples.dmlab.train_dmlab", args, timeout=60)
    assert result.returncode == 1, result.explain()
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "'deepmind_lab'" in errors[0] and "bazel build" in errors[0], result.output
    assert not (tmp_path / "runs").exists(), "nothing may start (no experiment folder) when the simulator is missing"


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("deepmind_lab") is not None, reason="deepmind_lab is installed")
def test_generic_tool_reports_missing_deepmind_lab_in_one_line() -> None:
    result = run_module("sf_examples.sampler.random_policy_throughput", ["--env=dmlab_30", "--seconds=1"], timeout=60)
    assert result.returncode == 1 and "Traceback" not in result.output, result.explain()
    assert "'deepmind_lab'" in result.output
