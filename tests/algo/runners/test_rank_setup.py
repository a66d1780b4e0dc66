"""How a rank joins a distributed run: rank 0's configuration for every rank, refusals, over an in-process store."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch.distributed as dist

from sample_factory.algo.runners.rank_setup import (
    _configuration_of_rank_zero,
    _prepare_as_rank_zero,
    refuse_unsupported,
)
from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.validation import ConfigError
from sample_factory.utils.distributed import SEED_STRIDE, RankInfo

ZERO, ONE = RankInfo(0, 2, 0, "127.0.0.1", 1), RankInfo(1, 2, 1, "127.0.0.1", 1)


def _cfg(train_dir: Path, **flags):
    cfg = default_cfg(env="CartPole-v1", experiment="ddp")
    cfg.train_dir, cfg.device, cfg.seed = str(train_dir), "cpu", 7
    for name, value in flags.items():
        setattr(cfg, name, value)
    return cfg


def test_every_rank_takes_rank_zeros_configuration_with_its_own_seed_and_train_dir(tmp_path: Path) -> None:
    store = dist.HashStore()
    zero_cfg, finished = _prepare_as_rank_zero(_cfg(tmp_path / "node0", learning_rate=3e-4, batch_size=512), store)
    assert not finished
    # rank 1 was started with other values: rank 0's win, so that both train the same way
    one_cfg, one_finished = _configuration_of_rank_zero(_cfg(tmp_path / "node1", batch_size=64), ONE, store)
    assert not one_finished
    assert one_cfg.learning_rate == 3e-4 and one_cfg.batch_size == 512 == zero_cfg.batch_size
    assert one_cfg.seed == 7 + SEED_STRIDE and zero_cfg.seed == 7
    assert one_cfg.train_dir == str(tmp_path / "node1") and one_cfg.experiment == "ddp"


def test_a_configuration_rank_zero_refuses_is_refused_on_every_rank(tmp_path: Path) -> None:
    store = dist.HashStore()
    with pytest.raises(ConfigError) as refused:
        _prepare_as_rank_zero(_cfg(tmp_path, batch_size=100, recurrence=32), store)
    with pytest.raises(ConfigError, match="rank 0 refused the configuration") as relayed:
        _configuration_of_rank_zero(_cfg(tmp_path), ONE, store)
    assert str(refused.value) in str(relayed.value)


def test_a_finished_experiment_has_nothing_to_do_on_any_rank(tmp_path: Path) -> None:
    store = dist.HashStore()
    cfg = _cfg(tmp_path, train_for_env_steps=1000)
    (tmp_path / "ddp").mkdir()
    (tmp_path / "ddp" / "done").write_text("1024\n")
    assert _prepare_as_rank_zero(cfg, store)[1] is True
    assert _configuration_of_rank_zero(_cfg(tmp_path), ONE, store)[1] is True


@pytest.mark.parametrize(
    "flags, message",
    [
        ({"with_pbt": True}, "--with_pbt=True cannot run distributed"),
        ({"serial_mode": True, "num_policies": 2}, "--serial_mode=True with --num_policies=2 cannot run distributed"),
    ],
)
def test_what_cannot_run_distributed_is_refused_with_the_reason(tmp_path: Path, flags: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        refuse_unsupported(_cfg(tmp_path, **flags), ZERO)
    refuse_unsupported(_cfg(tmp_path, num_policies=2), ZERO)  # several policies in parallel mode are fine
