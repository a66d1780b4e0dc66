"""What the example scripts' ``main`` functions are made of: family flags, the one-call train/enjoy mains, the
defaults-only parse, and the EnvPool families' early dependency check."""

from __future__ import annotations

import argparse

import pytest

import sf_examples.entry_points as entry_points
from sample_factory.envs.env_families import EnvFamily
from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config
from sf_examples.entry_points import FamilyFlags, enjoy_family, parse_with_defaults, train_family
from sf_examples.families import ATARI, PETTINGZOO


def test_family_flags_of_a_family_table_entry_adds_its_flags_and_defaults() -> None:
    flags = FamilyFlags.of(ATARI, enjoy_script="sf_examples.atari.enjoy_atari")
    cfg = flags.parse(["--env=atari_pong", "--atari_repeat_action_probability=0.25"], evaluation=True)
    assert cfg.atari_repeat_action_probability == 0.25  # the family's own flag, from the command line
    assert cfg.env_frameskip == 4  # the family's default on Sample Factory's flag
    assert (cfg.train_script, cfg.enjoy_script) == ("sf_examples.atari.train_atari", "sf_examples.atari.enjoy_atari")


def test_family_flags_of_needs_default_env_exactly_for_env_name_first_families() -> None:
    with pytest.raises(ValueError, match="default_env"):
        FamilyFlags.of(PETTINGZOO)
    with pytest.raises(ValueError, match="default_env"):
        FamilyFlags.of(ATARI, default_env="atari_pong")


def test_family_flags_of_a_family_without_hooks_is_an_error() -> None:
    bare = EnvFamily(name="bare", train_script="x", register="x:y")
    with pytest.raises(ValueError, match="bare"):
        FamilyFlags.of(bare)


class _Script:
    """Records what a script's main did, in order."""

    def __init__(self, env: str) -> None:
        self.env = env
        self.calls: list[str] = []

    def register(self) -> None:
        self.calls.append("register")

    def parse(self, evaluation: bool = False) -> Config:
        self.calls.append(f"parse(evaluation={evaluation})")
        return argparse.Namespace(env=self.env)

    def run(self, cfg: Config) -> int:
        self.calls.append(f"run({cfg.env})")
        return ExperimentStatus.SUCCESS


def test_train_family_registers_parses_then_trains_a_known_env(monkeypatch) -> None:
    script = _Script("env_a")
    monkeypatch.setattr(entry_points, "run_rl", script.run)
    assert train_family(script.register, script.parse, {"env_a", "env_b"}) == ExperimentStatus.SUCCESS
    assert script.calls == ["register", "parse(evaluation=False)", "run(env_a)"]


def test_train_family_refuses_an_env_outside_the_family(monkeypatch) -> None:
    script = _Script("env_c")
    monkeypatch.setattr(entry_points, "run_rl", script.run)
    assert train_family(script.register, script.parse, {"env_a"}) == ExperimentStatus.FAILURE
    assert "run(env_c)" not in script.calls


def test_train_family_without_env_names_trains_any_env(monkeypatch) -> None:
    script = _Script("anything")
    monkeypatch.setattr(entry_points, "run_rl", script.run)
    assert train_family(script.register, script.parse) == ExperimentStatus.SUCCESS
    assert script.calls[-1] == "run(anything)"


def test_enjoy_family_parses_with_the_watching_defaults_and_runs_the_given_tool() -> None:
    script = _Script("env_a")
    assert enjoy_family(script.register, script.parse, {"env_a"}, run=script.run) == ExperimentStatus.SUCCESS
    assert script.calls == ["register", "parse(evaluation=True)", "run(env_a)"]


def test_parse_with_defaults_applies_them_and_the_command_line_wins() -> None:
    defaults = {"num_workers": 3, "rollout": 16}
    cfg = parse_with_defaults(defaults, ["--env=CartPole-v1", "--rollout=8"])
    assert (cfg.num_workers, cfg.rollout) == (3, 8)
    assert parse_with_defaults(defaults, ["--env=CartPole-v1"], evaluation=True).num_workers == 3


def test_envpool_registration_checks_envpool_first(monkeypatch) -> None:
    """Without envpool, registering (what generic tools do first) fails at once, in the main process."""
    import sf_examples.envpool.envpool_family as envpool_family
    from sf_examples.envpool.atari.train_envpool_atari import register_envpool_atari_family

    def no_envpool() -> None:
        raise MissingDependencyError("EnvPool envs need the Python package 'envpool'")

    monkeypatch.setattr(envpool_family, "require_envpool", no_envpool)
    with pytest.raises(MissingDependencyError, match="envpool"):
        register_envpool_atari_family("envpool_atari_pong")
