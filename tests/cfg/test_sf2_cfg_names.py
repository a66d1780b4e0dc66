"""Sample Factory 2's configuration names: add_eval_args(parser), postprocess_args, preprocess_cfg, Configurable."""

from __future__ import annotations

import argparse
import logging

from gymnasium import spaces

from sample_factory.cfg.arguments import default_cfg, parse_full_cfg, parse_sf_args, postprocess_args, preprocess_cfg
from sample_factory.cfg.cfg import add_eval_args
from sample_factory.cfg.configurable import Configurable
from sample_factory.utils.attr_dict import AttrDict


def test_add_eval_args_declares_the_eval_flags_by_keyword() -> None:
    parser = argparse.ArgumentParser()
    add_eval_args(parser=parser)
    cfg = parser.parse_args(["--max_num_episodes=7", "--no_render"])
    assert cfg.max_num_episodes == 7 and cfg.no_render is True
    assert parser.parse_args([]).fps == 0


def test_postprocess_args_records_explicit_flags_and_resolves_recurrence() -> None:
    argv = ["--env=foo", "--use_rnn=False", "--recurrence", "-1", "--gamma=0.9"]
    parser, _ = parse_sf_args(argv)
    raw = parser.parse_args(argv)
    assert raw.recurrence == -1
    cfg = postprocess_args(args=raw, argv=argv, parser=parser)
    assert cfg is raw
    assert cfg.recurrence == 1  # no RNN: one step
    assert cfg.cli_args == {"env": "foo", "use_rnn": False, "recurrence": -1, "gamma": 0.9}
    assert cfg.command_line == "--env=foo --use_rnn=False --recurrence -1 --gamma=0.9"
    # the same config as the full parse gives
    full = parse_full_cfg(parser, argv)
    assert vars(full) == vars(cfg)


def test_postprocess_args_maps_legacy_names(caplog) -> None:
    argv = ["--env=foo", "--ppo_epochs=3"]
    parser, _ = parse_sf_args(argv)
    cfg = postprocess_args(parser.parse_args(argv), argv, parser)
    assert cfg.num_epochs == 3 and not hasattr(cfg, "ppo_epochs")
    assert cfg.cli_args["num_epochs"] == 3


def _env_info(action_space: spaces.Space) -> AttrDict:
    return AttrDict(obs_space=spaces.Dict({"obs": spaces.Box(-1, 1, (3,))}), action_space=action_space, num_agents=1)


def test_preprocess_cfg_accepts_a_fitting_env_and_resolves_recurrence() -> None:
    cfg = AttrDict(vars(default_cfg()))
    cfg.recurrence, cfg.use_rnn, cfg.rollout = -1, True, 16
    assert preprocess_cfg(cfg, _env_info(spaces.Discrete(3))) is True
    assert cfg.recurrence == 16


def test_preprocess_cfg_rejects_a_setting_the_env_cannot_take(sf_log) -> None:
    cfg = default_cfg()
    cfg.exploration_loss = "symmetric_kl"
    assert preprocess_cfg(cfg, _env_info(spaces.Box(-1, 1, (2,)))) is False
    assert "--exploration_loss=entropy" in sf_log.text(logging.ERROR)


def test_configurable_shares_the_config() -> None:
    class Component(Configurable):
        def lr(self) -> float:
            return self.cfg.learning_rate

    cfg = AttrDict(learning_rate=1e-3)
    first, second = Component(cfg), Configurable(cfg=cfg)
    cfg.learning_rate = 5e-4
    assert first.lr() == 5e-4 and second.cfg is cfg
