"""Parsing behaviour: legacy aliases, recurrence resolution, explicit flags, --help after family overrides."""

from __future__ import annotations

import logging
import re

import pytest
from gymnasium import spaces

from sample_factory.cfg.arguments import (
    cfg_dict,
    cfg_str,
    default_cfg,
    parse_full_cfg,
    parse_sf_args,
    verify_cfg,
)
from sample_factory.utils.attr_dict import AttrDict


def _parse(argv: list[str], evaluation: bool = False):
    parser, _ = parse_sf_args(argv, evaluation=evaluation)
    return parse_full_cfg(parser, argv)


@pytest.mark.parametrize(
    ("old", "new"), [("ppo_epochs", "num_epochs"), ("num_minibatches_to_accumulate", "num_batches_to_accumulate")]
)
def test_legacy_alias_maps_onto_new_flag_with_warning(sf_log, old: str, new: str) -> None:
    cfg = _parse(["--env=e", f"--{old}=7"])
    assert getattr(cfg, new) == 7
    assert not hasattr(cfg, old)
    assert cfg.cli_args == {"env": "e", new: 7}
    warnings = sf_log.messages(logging.WARNING)
    assert len(warnings) == 1
    assert f"--{old}" in warnings[0] and f"--{new}=7" in warnings[0]


def test_legacy_alias_together_with_new_name_is_an_error(capsys) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse(["--ppo_epochs=2", "--num_epochs=3"])
    assert exit_info.value.code == 2
    assert "pass only --num_epochs" in capsys.readouterr().err


def test_no_warning_without_legacy_flags(sf_log) -> None:
    _parse(["--num_epochs=3"])
    assert sf_log.messages(logging.WARNING) == []


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--rollout=48"], 48),
        (["--rollout=48", "--use_rnn=False"], 1),
        (["--rollout=48", "--recurrence=16"], 16),
        (["--use_rnn=False", "--recurrence=4"], 4),
    ],
)
def test_recurrence_minus_one_resolves(argv: list[str], expected: int) -> None:
    assert _parse(argv).recurrence == expected


def test_recurrence_follows_a_family_default_for_rollout() -> None:
    parser, _ = parse_sf_args([])
    parser.set_defaults(rollout=96)
    assert parse_full_cfg(parser, []).recurrence == 96


def test_cli_args_hold_exactly_the_explicit_flags_in_any_spelling() -> None:
    argv = ["--gamma", "0.9", "--batch_size=1024", "--encoder_mlp_layers", "64", "64", "--use_rnn=False"]
    cfg = _parse(argv)
    # --batch_size equals its default but was typed, so it counts as explicit.
    assert cfg.cli_args == {"gamma": 0.9, "batch_size": 1024, "encoder_mlp_layers": [64, 64], "use_rnn": False}
    assert cfg.command_line == " ".join(argv)


def test_eval_flag_store_true_counts_as_explicit() -> None:
    cfg = _parse(["--no_render"], evaluation=True)
    assert cfg.no_render is True and cfg.save_video is False
    assert cfg.cli_args == {"no_render": True}


def test_partial_parse_ignores_family_flags_and_help() -> None:
    parser, partial = parse_sf_args(["--env=doom_basic", "--doom_res=128", "--help"])
    assert partial.env == "doom_basic"
    parser.add_argument("--doom_res", type=int, default=64)
    assert parse_full_cfg(parser, ["--env=doom_basic", "--doom_res=128"]).doom_res == 128


def test_abbreviated_flags_are_not_taken_for_longer_ones() -> None:
    """A family flag that is a prefix of a standard flag must not be swallowed by the partial parse."""
    _, partial = parse_sf_args(["--num_envs=4"])
    assert partial.num_envs_per_worker == 2


def test_unknown_flag_fails_the_final_parse(capsys) -> None:
    parser, _ = parse_sf_args(["--not_a_flag=1"])
    with pytest.raises(SystemExit):
        parse_full_cfg(parser, ["--not_a_flag=1"])
    assert "--not_a_flag" in capsys.readouterr().err


def _help_entry(help_text: str, flag: str) -> str:
    """The lines of one flag's entry in argparse's help output."""
    match = re.search(rf"\n  {re.escape(flag)}\b.*?(?=\n  -|\n\n|\Z)", help_text, flags=re.S)
    assert match, f"{flag} missing from --help"
    return " ".join(match.group(0).split())


def test_help_shows_defaults_overridden_by_env_family(capsys) -> None:
    argv = ["--env=my_family_env", "--help"]
    parser, partial = parse_sf_args(argv)
    assert partial.env == "my_family_env"  # the partial parse did not exit on --help
    parser.add_argument("--my_family_flag", type=int, default=5, help="A flag only this family has.")
    parser.set_defaults(rollout=123, use_rnn=False, encoder_mlp_layers=[32, 16])
    with pytest.raises(SystemExit) as exit_info:
        parse_full_cfg(parser, argv)
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert "(default: 123)" in _help_entry(help_text, "--rollout")
    assert "(default: False)" in _help_entry(help_text, "--use_rnn")
    assert "(default: [32, 16])" in _help_entry(help_text, "--encoder_mlp_layers")
    assert "(default: 5)" in _help_entry(help_text, "--my_family_flag")
    assert "(default: 32)" not in help_text


def test_parse_full_cfg_can_run_twice_on_one_parser() -> None:
    parser, _ = parse_sf_args([])
    assert parse_full_cfg(parser, ["--rollout=8"]).rollout == 8
    assert parse_full_cfg(parser, []).rollout == 32


def test_default_cfg_has_every_default() -> None:
    cfg = default_cfg(algo="APPO", env="CartPole-v1", experiment="exp1")
    assert (cfg.algo, cfg.env, cfg.experiment) == ("APPO", "CartPole-v1", "exp1")
    assert cfg.batch_size == 1024 and cfg.recurrence == 32 and cfg.device == "gpu"
    assert cfg.cli_args == {"algo": "APPO", "env": "CartPole-v1", "experiment": "exp1"}
    assert not hasattr(cfg, "fps")  # evaluation flags are not part of a training config


def test_cfg_dict_is_a_copy_and_cfg_str_lists_every_parameter() -> None:
    cfg = default_cfg()
    params = cfg_dict(cfg)
    params["gamma"] = 0.5
    assert cfg.gamma == 0.99
    text = cfg_str(cfg)
    assert len(text.splitlines()) == len(vars(cfg))
    assert re.search(r"^gamma\s+= 0\.99$", text, flags=re.M)
    assert cfg_dict(AttrDict(a=1)) == {"a": 1}


def _env_info(action_space: spaces.Space, obs_space: spaces.Space | None = None, num_agents: int = 1) -> AttrDict:
    obs_space = obs_space or spaces.Dict({"obs": spaces.Box(-1, 1, (3,))})
    return AttrDict(obs_space=obs_space, action_space=action_space, num_agents=num_agents)


def test_verify_cfg_accepts_defaults() -> None:
    assert verify_cfg(default_cfg(), _env_info(spaces.Discrete(3))) is True


@pytest.mark.parametrize(
    "action_space",
    [spaces.Box(-1, 1, (2,)), spaces.Tuple([spaces.Discrete(2), spaces.Box(-1, 1, (1,))])],
)
def test_verify_cfg_rejects_symmetric_kl_with_continuous_actions(sf_log, action_space: spaces.Space) -> None:
    cfg = default_cfg()
    cfg.exploration_loss = "symmetric_kl"
    assert verify_cfg(cfg, _env_info(action_space)) is False
    assert "--exploration_loss=entropy" in sf_log.text(logging.ERROR)
    assert verify_cfg(cfg, _env_info(spaces.Discrete(4))) is True


def test_verify_cfg_rejects_vtrace_with_short_recurrence(sf_log) -> None:
    cfg = default_cfg()
    cfg.with_vtrace, cfg.recurrence = True, 8
    assert verify_cfg(cfg, _env_info(spaces.Discrete(3))) is False
    assert "--with_vtrace=True" in sf_log.text(logging.ERROR)


def test_verify_cfg_rejects_unknown_normalize_input_keys(sf_log) -> None:
    cfg = default_cfg()
    cfg.normalize_input_keys = ["obs", "measurements"]
    assert verify_cfg(cfg, _env_info(spaces.Discrete(3))) is False
    assert "measurements" in sf_log.text(logging.ERROR)
    cfg.normalize_input_keys = ["obs"]
    assert verify_cfg(cfg, _env_info(spaces.Discrete(3))) is True


@pytest.mark.parametrize(
    ("obs_space", "key"),
    [
        (spaces.Tuple([spaces.Box(-1, 1, (2,)), spaces.Discrete(2)]), "'obs'"),
        (spaces.Dict({"pos": spaces.Box(-1, 1, (2,)), "name": spaces.Text(8)}), "'name'"),
    ],
)
def test_verify_cfg_rejects_observations_that_cannot_be_stacked(sf_log, obs_space: spaces.Space, key: str) -> None:
    assert verify_cfg(default_cfg(), _env_info(spaces.Discrete(2), obs_space)) is False
    error = sf_log.text(logging.ERROR)
    assert f"observation {key}" in error and "gymnasium.wrappers.FlattenObservation" in error
    stackable = spaces.Dict({"a": spaces.Box(-1, 1, (2,)), "b": spaces.Discrete(3), "c": spaces.MultiBinary(4)})
    assert verify_cfg(default_cfg(), _env_info(spaces.Discrete(2), stackable)) is True


def _gpu_actions_cfg(envs_per_worker: int, splits: int):
    cfg = default_cfg()
    cfg.batched_sampling, cfg.env_gpu_actions = True, True
    cfg.num_envs_per_worker, cfg.worker_num_splits = envs_per_worker, splits
    return cfg


def test_verify_cfg_rejects_gpu_actions_for_envs_stepped_one_by_one(sf_log) -> None:
    assert verify_cfg(_gpu_actions_cfg(2, 2), _env_info(spaces.Discrete(2))) is False
    assert "not natively vectorised" in sf_log.text(logging.ERROR) and "drop --env_gpu_actions" in sf_log.text()
    tuple_actions = spaces.Tuple([spaces.Discrete(2), spaces.Discrete(2)])
    assert verify_cfg(_gpu_actions_cfg(2, 2), _env_info(tuple_actions, num_agents=64)) is False


def test_verify_cfg_rejects_gpu_actions_with_several_vectorised_envs_per_split(sf_log) -> None:
    assert verify_cfg(_gpu_actions_cfg(4, 2), _env_info(spaces.Discrete(2), num_agents=64)) is False
    assert "use --num_envs_per_worker=2 or drop --env_gpu_actions" in sf_log.text(logging.ERROR)
    assert verify_cfg(_gpu_actions_cfg(2, 2), _env_info(spaces.Discrete(2), num_agents=64)) is True
