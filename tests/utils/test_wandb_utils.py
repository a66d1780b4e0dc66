"""SF2's ``sample_factory.utils.wandb_utils``: ``init_wandb(cfg)`` starts the experiment's W&B run (with a stable id
kept in the experiment folder), ``finish_wandb(cfg)`` ends it once; a missing package names the install command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.wandb_utils import RUN_ID_FILE, finish_wandb, init_wandb


def _cfg(tmp_path: Path, with_wandb: bool = True) -> argparse.Namespace:
    return argparse.Namespace(
        with_wandb=with_wandb, train_dir=str(tmp_path), experiment="w", env="CartPole-v1", wandb_user="me",
        wandb_project="sf", wandb_group=None, wandb_job_type="SF", wandb_tags=["a"],
    )  # fmt: skip


class FakeWandb:
    """Records ``wandb.init`` calls and what each run logs and when it finishes."""

    def __init__(self) -> None:
        self.inits: list[dict] = []
        self.events: list = []

    def init(self, **kwargs):
        self.inits.append(kwargs)
        return SimpleNamespace(id=kwargs["id"], log=self.events.append, finish=lambda: self.events.append("finish"))


@pytest.fixture
def fake_wandb(monkeypatch: pytest.MonkeyPatch) -> FakeWandb:
    fake = FakeWandb()
    monkeypatch.setitem(sys.modules, "wandb", fake)
    return fake


def test_without_the_flag_nothing_happens(tmp_path: Path, fake_wandb: FakeWandb) -> None:
    cfg = _cfg(tmp_path, with_wandb=False)
    assert init_wandb(cfg) is None
    finish_wandb(cfg)
    assert fake_wandb.inits == [] and fake_wandb.events == []


def test_init_then_finish_once(tmp_path: Path, fake_wandb: FakeWandb) -> None:
    cfg = _cfg(tmp_path)
    logger = init_wandb(cfg)
    (init,) = fake_wandb.inits
    assert init["project"] == "sf" and init["entity"] == "me" and init["group"] == "CartPole-v1"
    assert init["name"] == "w" and init["dir"] == str(tmp_path / "w") and init["config"]["wandb_tags"] == ["a"]
    assert init["id"] == (tmp_path / "w" / RUN_ID_FILE).read_text().strip()
    logger.log(1, {"reward": 2.0, "skipped": None}, env_steps=500)
    finish_wandb(cfg)
    finish_wandb(cfg)
    logger.close()
    assert fake_wandb.events == [{"p1/reward": 2.0, "global_step": 500}, "finish"]


def test_resumed_experiment_continues_the_same_run(tmp_path: Path, fake_wandb: FakeWandb) -> None:
    cfg = AttrDict(vars(_cfg(tmp_path)))  # a config loaded from config.json
    init_wandb(cfg)
    finish_wandb(cfg)
    init_wandb(cfg)
    finish_wandb(cfg)
    first, second = fake_wandb.inits
    assert first["id"] == second["id"] and second["resume"] == "allow"
    assert fake_wandb.events == ["finish", "finish"]


def test_missing_package_names_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wandb", None)  # makes `import wandb` fail even where it is installed
    with pytest.raises(ImportError, match=r'pip install "sample-factory\[wandb\]"'):
        init_wandb(_cfg(tmp_path))
