"""config.json writing, resume merging (explicit flags win) and --restart_behavior on the experiment folder."""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path

import pytest

from sample_factory.cfg.arguments import (
    checkpoint_override_defaults,
    load_from_checkpoint,
    maybe_load_from_checkpoint,
    parse_full_cfg,
    parse_sf_args,
)
from sample_factory.cfg.experiment_files import prepare_experiment_dir, save_config
from sample_factory.cfg.validation import ConfigError
from sample_factory.utils.utils import cfg_file, experiment_dir

BOOKKEEPING = {"cli_args", "command_line"}


@pytest.fixture
def base_argv(tmp_path: Path) -> list[str]:
    return [f"--train_dir={tmp_path / 'train_dir'}", "--experiment=exp", "--env=e", "--device=cpu"]


def _parse(argv: list[str], evaluation: bool = False):
    parser, _ = parse_sf_args(argv, evaluation=evaluation)
    return parse_full_cfg(parser, argv)


def _saved_experiment(base_argv: list[str]) -> dict:
    """Train-like first run with a few non-default flags; returns what config.json holds."""
    cfg = _parse([*base_argv, "--rollout=64", "--batch_size=2048", "--gamma=0.9"])
    with open(save_config(cfg), encoding="utf-8") as file:
        return json.load(file)


def _rewrite_saved(cfg_path: str, **changes) -> None:
    with open(cfg_path, encoding="utf-8") as file:
        saved = json.load(file)
    for name, value in changes.items():
        if value is None:
            del saved[name]
        else:
            saved[name] = value
    with open(cfg_path, "w", encoding="utf-8") as file:
        json.dump(saved, file)


def test_save_config_writes_every_parameter_atomically(base_argv: list[str]) -> None:
    cfg = _parse([*base_argv, "--rollout=64"])
    path = save_config(cfg)
    assert path == cfg_file(cfg)
    with open(path, encoding="utf-8") as file:
        saved = json.load(file)
    assert saved == json.loads(json.dumps(vars(cfg)))
    assert saved["cli_args"]["rollout"] == 64 and saved["command_line"] == " ".join([*base_argv, "--rollout=64"])
    assert saved["pbt_perturb_max"] == 1.5  # defaults are stored too
    assert os.listdir(experiment_dir(cfg)) == ["config.json"]  # no temp file left behind


def test_failed_save_keeps_previous_config_and_leaves_no_temp_file(base_argv: list[str]) -> None:
    cfg = _parse(base_argv)
    path = save_config(cfg)
    before = Path(path).read_text()
    cfg.gamma = object()
    with pytest.raises(TypeError, match="cannot be saved to config.json"):
        save_config(cfg)
    assert Path(path).read_text() == before
    assert os.listdir(experiment_dir(cfg)) == ["config.json"]


def test_resume_only_the_explicit_flag_differs_from_saved(base_argv: list[str], sf_log) -> None:
    saved = _saved_experiment(base_argv)
    cfg = _parse([*base_argv, "--learning_rate=0.5"])  # rollout, batch_size, gamma not repeated
    merged = load_from_checkpoint(cfg)
    changed = {name for name in saved if name not in BOOKKEEPING and merged[name] != saved[name]}
    assert changed == {"learning_rate"}
    assert set(merged) == set(saved)
    assert (merged.rollout, merged.batch_size, merged.gamma, merged.learning_rate) == (64, 2048, 0.9, 0.5)
    assert merged.cli_args == cfg.cli_args
    assert "Overriding arg 'learning_rate' with value 0.5 passed from command line" in sf_log.text(logging.INFO)


def test_resume_explicit_recurrence_minus_one_is_resolved_again(base_argv: list[str]) -> None:
    _saved_experiment(base_argv)
    merged = load_from_checkpoint(_parse([*base_argv, "--recurrence=-1"]))
    assert merged.recurrence == 64


def test_new_flags_missing_from_old_config_take_current_values(base_argv: list[str], sf_log) -> None:
    _saved_experiment(base_argv)
    cfg = _parse(base_argv, evaluation=True)
    _rewrite_saved(cfg_file(cfg), pbt_perturb_max=None)
    merged = load_from_checkpoint(cfg)
    assert merged.pbt_perturb_max == 1.5
    assert merged.fps == 0  # evaluation-only flags join the training config
    assert "Adding new argument 'pbt_perturb_max'=1.5" in sf_log.text(logging.INFO)


def test_legacy_key_in_old_config_loads_under_new_name(base_argv: list[str]) -> None:
    _saved_experiment(base_argv)
    cfg = _parse(base_argv)
    _rewrite_saved(cfg_file(cfg), num_epochs=None, ppo_epochs=4)
    merged = load_from_checkpoint(cfg)
    assert merged.num_epochs == 4 and "ppo_epochs" not in merged


def test_moved_experiment_keeps_its_current_location(base_argv: list[str]) -> None:
    _saved_experiment(base_argv)
    cfg = _parse(base_argv)
    _rewrite_saved(cfg_file(cfg), train_dir="/cluster/home/someone/train_dir")
    assert load_from_checkpoint(cfg).train_dir == cfg.train_dir


def test_missing_config_explains_how_to_train_first(base_argv: list[str]) -> None:
    cfg = _parse(base_argv)
    with pytest.raises(FileNotFoundError) as error:
        load_from_checkpoint(cfg)
    message = str(error.value)
    assert experiment_dir(cfg, mkdir=False) in message and "Train it first" in message


def test_maybe_load_from_checkpoint(base_argv: list[str]) -> None:
    fresh = maybe_load_from_checkpoint(_parse(base_argv))
    assert fresh.rollout == 32 and fresh.cli_args["experiment"] == "exp"
    _saved_experiment(base_argv)
    assert maybe_load_from_checkpoint(_parse(base_argv)).rollout == 64
    assert maybe_load_from_checkpoint(_parse([*base_argv, "--restart_behavior=restart"])).rollout == 32


def test_checkpoint_override_defaults_makes_saved_values_the_defaults(base_argv: list[str], capsys) -> None:
    _saved_experiment(base_argv)
    parser, partial = parse_sf_args(base_argv, evaluation=True)
    saved = checkpoint_override_defaults(partial, parser)
    assert saved.rollout == 64
    cfg = parse_full_cfg(parser, [*base_argv, "--gamma=0.5"])
    assert (cfg.rollout, cfg.batch_size, cfg.gamma) == (64, 2048, 0.5)
    assert "rollout" not in cfg.cli_args
    with pytest.raises(SystemExit):
        parse_full_cfg(parser, [*base_argv, "--help"])
    assert "(default: 2048)" in " ".join(capsys.readouterr().out.split())


def test_checkpoint_override_defaults_without_saved_experiment(base_argv: list[str]) -> None:
    parser, partial = parse_sf_args(base_argv)
    assert checkpoint_override_defaults(partial, parser) == {}
    assert parse_full_cfg(parser, base_argv).rollout == 32


def test_prepare_resume_returns_merged_config(base_argv: list[str]) -> None:
    _saved_experiment(base_argv)
    cfg = prepare_experiment_dir(_parse([*base_argv, "--train_for_env_steps=500"]))
    assert (cfg.rollout, cfg.train_for_env_steps) == (64, 500)


def test_prepare_resume_without_saved_config_starts_fresh(base_argv: list[str]) -> None:
    cfg = _parse(base_argv)
    assert prepare_experiment_dir(cfg) is cfg


def _make_user_files(cfg) -> Path:
    folder = Path(experiment_dir(cfg))
    (folder / "notes.txt").write_text("precious")
    return folder


def test_restart_moves_old_folder_aside(base_argv: list[str], sf_log) -> None:
    cfg = _parse([*base_argv, "--restart_behavior=restart"])
    folder = _make_user_files(cfg)
    assert prepare_experiment_dir(cfg) is cfg
    assert not folder.exists()
    aside = [p for p in folder.parent.iterdir() if p.name != "exp"]
    assert len(aside) == 1 and re.fullmatch(r"exp_old_\d{8}_\d{6}", aside[0].name)
    assert (aside[0] / "notes.txt").read_text() == "precious"
    assert str(aside[0]) in sf_log.text(logging.WARNING)


def test_two_quick_restarts_keep_both_old_folders(base_argv: list[str]) -> None:
    cfg = _parse([*base_argv, "--restart_behavior=restart"])
    for _ in range(2):
        folder = _make_user_files(cfg)
        prepare_experiment_dir(cfg)
    assert len([p for p in folder.parent.iterdir() if p.name.startswith("exp_old_")]) == 2


def test_overwrite_deletes_old_folder_with_warning(base_argv: list[str], sf_log) -> None:
    cfg = _parse([*base_argv, "--restart_behavior=overwrite"])
    folder = _make_user_files(cfg)
    prepare_experiment_dir(cfg)
    assert not folder.exists()
    assert list(folder.parent.iterdir()) == []
    assert "deleting" in sf_log.text(logging.WARNING)


@pytest.mark.parametrize("behavior", ["restart", "overwrite"])
def test_invalid_config_touches_nothing(base_argv: list[str], behavior: str) -> None:
    cfg = _parse([*base_argv, f"--restart_behavior={behavior}", "--batch_size=1000"])
    folder = _make_user_files(cfg)
    with pytest.raises(ConfigError, match="--batch_size=1000"):
        prepare_experiment_dir(cfg)
    assert (folder / "notes.txt").exists()


def test_unknown_restart_behavior_is_rejected(base_argv: list[str]) -> None:
    cfg = _parse(base_argv)
    cfg.restart_behavior = "keep"
    with pytest.raises(ConfigError, match="--restart_behavior=keep"):
        prepare_experiment_dir(cfg)
