"""W&B: off by default, a clear error when the package is missing, summaries mirrored when it is present."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from lifecycle_helpers import TRAIN, cartpole_args
from sf_run import run_module

from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils.wandb_utils import RUN_ID_FILE, init_wandb


def _cfg(tmp_path: Path, with_wandb: bool) -> argparse.Namespace:
    return argparse.Namespace(
        with_wandb=with_wandb, train_dir=str(tmp_path), experiment="w", env="CartPole-v1", wandb_user=None,
        wandb_project="sf", wandb_group=None, wandb_job_type="SF", wandb_tags=["a"],
    )  # fmt: skip


def test_disabled_by_default(tmp_path: Path) -> None:
    assert init_wandb(_cfg(tmp_path, False)) is None


def test_missing_package_names_the_install_command(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes `import wandb` fail even where it is installed
    with pytest.raises(MissingDependencyError, match=r'pip install "sample-factory\[wandb\]"'):
        init_wandb(_cfg(tmp_path, True))


def test_logger_mirrors_scalars_and_keeps_run_id(tmp_path: Path, monkeypatch) -> None:
    calls: list = []
    run = SimpleNamespace(id="r", log=lambda data: calls.append(data), finish=lambda: calls.append("finished"))
    fake = SimpleNamespace(init=lambda **kwargs: calls.append(kwargs) or run)
    monkeypatch.setitem(sys.modules, "wandb", fake)
    logger = init_wandb(_cfg(tmp_path, True))
    logger.log(0, {"0_aux/avg_reward": 3.0}, 1000)
    logger.close()
    init_kwargs, logged, finished = calls
    assert init_kwargs["resume"] == "allow" and init_kwargs["group"] == "CartPole-v1" and init_kwargs["tags"] == ["a"]
    assert logged == {"p0/0_aux/avg_reward": 3.0, "global_step": 1000} and finished == "finished"
    init_wandb(_cfg(tmp_path, True))
    assert calls[-1]["id"] == init_kwargs["id"] == (tmp_path / "w" / RUN_ID_FILE).read_text().strip()


@pytest.mark.skipif("wandb" in sys.modules or __import__("importlib").util.find_spec("wandb") is not None,
                    reason="wandb is installed")  # fmt: skip
def test_training_with_wandb_fails_before_starting_processes(tmp_path: Path) -> None:
    result = run_module(TRAIN, cartpole_args(tmp_path, "w", 1000, "--with_wandb=True"), timeout=60)
    assert result.returncode == 1
    assert 'pip install "sample-factory[wandb]"' in result.output
    assert "Started" not in result.output
