"""Candidate moves, the constraints that skip a candidate before it runs, and the final choice."""

from __future__ import annotations

from dataclasses import replace

import pytest

from sample_factory.cfg.arguments import default_cfg
from sample_factory.tune.search import (
    Machine,
    MemoryModel,
    Settings,
    Space,
    choose,
    config_rejection,
    fewer_envs,
    more_envs,
    more_workers,
    propose,
    rejection,
    toggle_splits,
)

GIB = 2**30


def _cfg(tmp_path, **overrides):
    cfg = default_cfg(env="CartPole-v1")
    cfg.train_dir, cfg.device = str(tmp_path), "cpu"
    cfg.num_workers, cfg.num_envs_per_worker, cfg.worker_num_splits = 2, 4, 2
    for name, value in overrides.items():
        setattr(cfg, name, value)
    return cfg


def _space(tmp_path, cores=2, memory=16 * GIB, **overrides) -> Space:
    return Space(Machine(cores=cores, available_memory=memory), _cfg(tmp_path, **overrides))


def test_settings_flags_leave_batch_size_out_unless_it_is_tuned(tmp_path):
    s = Settings.from_cfg(_cfg(tmp_path))
    assert s.flags() == [
        "--num_workers=2", "--num_envs_per_worker=4", "--worker_num_splits=2", "--batched_sampling=False",
        "--policy_workers_per_policy=1",
    ]  # fmt: skip
    assert s.flags(with_batch_size=True)[-1] == f"--batch_size={s.batch_size}"


def test_moves_keep_envs_divisible_by_splits(tmp_path):
    space = _space(tmp_path)
    s = Settings.from_cfg(space.base_cfg)
    assert more_envs(s, space).num_envs_per_worker == 8
    halved = fewer_envs(replace(s, num_envs_per_worker=2), space)
    assert (halved.num_envs_per_worker, halved.worker_num_splits) == (1, 1)
    assert toggle_splits(replace(s, num_envs_per_worker=3, worker_num_splits=1), space) is None  # 3 envs: no 2 splits
    assert toggle_splits(s, space).worker_num_splits == 1


def test_worker_ladder_follows_the_cores(tmp_path):
    space = _space(tmp_path, cores=8, num_workers=3)
    assert space.worker_ladder == [3, 4, 8, 16, 32]
    s = Settings.from_cfg(space.base_cfg)
    assert more_workers(s, space).num_workers == 4
    assert more_workers(replace(s, num_workers=32), space) is None


def test_the_librarys_validation_rejects_a_bad_candidate(tmp_path):
    cfg = _cfg(tmp_path)
    bad = replace(Settings.from_cfg(cfg), num_envs_per_worker=3, worker_num_splits=2)
    assert "multiple of --worker_num_splits" in config_rejection(bad, cfg)
    assert config_rejection(Settings.from_cfg(cfg), cfg) is None


def test_batch_size_changes_only_with_the_flag(tmp_path):
    space = _space(tmp_path)
    s = replace(Settings.from_cfg(space.base_cfg), batch_size=space.base_cfg.batch_size * 2)
    assert "--tune_batch_size" in rejection(s, space)
    space.tune_batch_size = True
    assert rejection(s, space) is None


def test_cores_and_memory_limit_the_candidates(tmp_path):
    space = _space(tmp_path, cores=2, memory=4 * GIB)
    base = Settings.from_cfg(space.base_cfg)
    assert "workers per core" in rejection(replace(base, num_workers=9), space)
    assert "inference worker" in rejection(replace(base, policy_workers_per_policy=2), space)
    space.memory = MemoryModel(base_total=1 * GIB, base=base, per_worker=GIB // 2, per_policy_worker=GIB)
    assert rejection(replace(base, num_workers=4), space) is None  # predicted 2 GiB of the 2 GiB allowed
    assert "memory" in rejection(replace(base, num_workers=8), space)  # predicted 4 GiB
    assert "memory" in rejection(replace(base, num_workers=4, num_envs_per_worker=8), space)  # envs count too


def test_propose_skips_invalid_and_seen_settings(tmp_path):
    space = _space(tmp_path, num_envs_per_worker=128)  # doubling gives 256 envs: allowed; the next doubling is not
    base = Settings.from_cfg(space.base_cfg)
    seen = {base}
    first = propose(base, space, seen)
    assert first.candidate.move == "more_envs" and first.candidate.settings.num_envs_per_worker == 256
    second = propose(first.candidate.settings, space, seen)
    assert [s.move for s in second.skipped] == ["more_envs"] and "envs per worker" in second.skipped[0].reason
    assert second.candidate.move == "toggle_batched"
    again = propose(first.candidate.settings, space, seen)  # nothing is proposed or reported twice
    assert again.candidate.settings != second.candidate.settings and not again.skipped


def _s(workers: int) -> Settings:
    return Settings(workers, 4, 2, False, 1, 1024)


def test_choose_keeps_the_baseline_unless_the_gain_is_clear():
    base, other = _s(2), _s(4)
    assert choose({base: [1000.0], other: [1030.0]}, base, min_gain=0.05).settings == base
    chosen = choose({base: [1000.0], other: [1100.0, 1080.0]}, base, min_gain=0.05)
    assert chosen.settings == other and "+9.0%" in chosen.reason
    assert choose({base: [1000.0], other: [900.0]}, base, 0.05).settings == base
    assert choose({}, base, 0.05).settings == base
    assert "raise --tune_seconds" in choose({base: [1000.0]}, base, 0.05).reason


@pytest.mark.parametrize("gain", [0.0, 0.2])
def test_choose_with_any_min_gain_never_picks_a_slower_setting(gain):
    base, other = _s(2), _s(4)
    assert choose({base: [1000.0], other: [999.0]}, base, gain).settings == base
