"""Each env family Sample Factory 2.1.1 ships sets the same defaults as there, value for value.

``sf2_family_defaults.tsv`` (next to this file) lists what 2.1.1's parameter files set, family by family. A family
config is parsed the way its train script parses it, for one representative env, and also the way the generic
tools (``python -m sample_factory.eval``) get it from the env-family registry, for training and for evaluation.
Every listed default must match, and a family may set no other common flag away from Sample Factory's general
default, unless ``DELIBERATE_DEVIATIONS`` names it with its reason (also given in the family's docs page).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_families import add_family_args
from sample_factory.utils.typing import Config
from sf_examples.families import register_example_families

TABLE = Path(__file__).with_name("sf2_family_defaults.tsv")
MISSING = "<not in the config>"

# family -> (its train script, the parse function there, a representative env)
FAMILIES: dict[str, tuple[str, str, str]] = {
    "mujoco": ("sf_examples.mujoco.train_mujoco", "parse_mujoco_cfg", "mujoco_ant"),
    "atari": ("sf_examples.atari.train_atari", "parse_atari_args", "atari_breakout"),
    "vizdoom": ("sf_examples.vizdoom.train_vizdoom", "parse_vizdoom_cfg", "doom_basic"),
    "dmlab": ("sf_examples.dmlab.train_dmlab", "parse_dmlab_args", "dmlab_benchmark"),
    "envpool_atari": ("sf_examples.envpool.atari.train_envpool_atari", "parse_atari_args", "envpool_atari_breakout"),
    "envpool_mujoco": ("sf_examples.envpool.mujoco.train_envpool_mujoco", "parse_mujoco_cfg", "envpool_mujoco_ant"),
}

# (family, flag) -> why ours differs from Sample Factory 2.1.1
DELIBERATE_DEVIATIONS: dict[tuple[str, str], str] = {
    ("atari", "reward_clip"): "SF2 clips rewards to their sign inside the env; we clip to [-1, 1] in the learner so "
    "the env's rewards stay game scores (enjoy, eval, logged sums); Atari rewards are integers, so the training "
    "signal is the same (docs/atari.md)",
}


def sf2_defaults() -> dict[str, dict[str, Any]]:
    table: dict[str, dict[str, Any]] = {}
    rows = [line.rstrip("\n").split("\t") for line in TABLE.read_text().splitlines() if not line.startswith("#")]
    assert rows[0] == ["family", "flag", "value"]
    for family, flag, value in rows[1:]:
        table.setdefault(family, {})[flag] = ast.literal_eval(value)
    return table


SF2 = sf2_defaults()


def train_script_parser(family: str) -> Callable[..., Config]:
    module, function, _ = FAMILIES[family]
    try:
        return getattr(importlib.import_module(module), function)
    except ImportError as exc:  # a simulator the train script imports is not installed
        pytest.skip(f"{module} cannot be imported here: {exc}")


def argv_of(family: str) -> list[str]:
    return ["--algo=APPO", f"--env={FAMILIES[family][2]}", "--experiment=defaults_test"]


def registry_cfg(family: str, evaluation: bool) -> dict[str, Any]:
    """The config a generic tool builds from the env name alone (sf_examples/families.py)."""
    register_example_families()  # again: other tests may have replaced the registry's families
    argv = argv_of(family)
    parser, _ = parse_sf_args(argv, evaluation=evaluation)
    add_family_args(parser, FAMILIES[family][2], evaluation=evaluation)
    return vars(parse_full_cfg(parser, argv))


def general_defaults(family: str, evaluation: bool) -> dict[str, Any]:
    """The same command line without the family's flags and defaults."""
    argv = argv_of(family)
    parser, _ = parse_sf_args(argv, evaluation=evaluation)
    return vars(parse_full_cfg(parser, argv))


def differences(family: str, cfg: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """flag -> (SF2's value, ours) for every listed default we do not match and did not choose to differ on."""
    return {
        flag: (sf2_value, cfg.get(flag, MISSING))
        for flag, sf2_value in SF2[family].items()
        if (family, flag) not in DELIBERATE_DEVIATIONS and cfg.get(flag, MISSING) != sf2_value
    }


def test_the_table_covers_every_family():
    assert set(SF2) == set(FAMILIES)
    assert sum(len(flags) for flags in SF2.values()) == 170


@pytest.mark.parametrize("family", FAMILIES)
def test_train_script_config_has_sf2_defaults(family: str):
    cfg = vars(train_script_parser(family)(argv=argv_of(family)))
    assert differences(family, cfg) == {}


@pytest.mark.parametrize("evaluation", [False, True], ids=["train", "eval"])
@pytest.mark.parametrize("family", FAMILIES)
def test_registry_config_has_sf2_defaults(family: str, evaluation: bool):
    assert differences(family, registry_cfg(family, evaluation)) == {}


@pytest.mark.parametrize("evaluation", [False, True], ids=["train", "eval"])
@pytest.mark.parametrize("family", FAMILIES)
def test_no_other_common_flag_is_moved(family: str, evaluation: bool):
    """A family default outside SF2's list would change a run that SF2 users expect to be the same."""
    general, cfg = general_defaults(family, evaluation), registry_cfg(family, evaluation)
    bookkeeping = {"train_script", "enjoy_script"}  # evaluation tools name the family's scripts in their hints
    moved = {
        flag: (general[flag], value)
        for flag, value in cfg.items()
        if flag in general and value != general[flag] and flag not in SF2[family] and flag not in bookkeeping
    }
    assert {flag: values for flag, values in moved.items() if (family, flag) not in DELIBERATE_DEVIATIONS} == {}


@pytest.mark.parametrize("deviation", DELIBERATE_DEVIATIONS, ids=lambda d: f"{d[0]}-{d[1]}")
def test_each_listed_deviation_is_still_one(deviation: tuple[str, str]):
    """The list names only real differences: a deviation that was fixed must leave it."""
    family, flag = deviation
    sf2_value = SF2[family].get(flag, general_defaults(family, False)[flag])
    assert registry_cfg(family, evaluation=False)[flag] != sf2_value


def test_vizdoom_watching_flags_keep_their_meaning():
    """``--eval_env_frameskip=1 --fps=35`` are enjoy's defaults, and a training config carries them (as in SF2)."""
    train_cfg = registry_cfg("vizdoom", evaluation=False)
    assert (train_cfg["eval_env_frameskip"], train_cfg["fps"]) == (1, 35)
    argv = [*argv_of("vizdoom"), "--eval_env_frameskip=2", "--fps=0"]
    parser, _ = parse_sf_args(argv, evaluation=True)
    add_family_args(parser, "doom_basic", evaluation=True)
    watch_cfg = parse_full_cfg(parser, argv)
    assert (watch_cfg.eval_env_frameskip, watch_cfg.fps) == (2, 0)  # the command line still wins


# family -> the registration function Sample Factory 2 users call before parsing, in the family's train script
REGISTRATION = {
    "mujoco": "register_mujoco_components",
    "atari": "register_atari_components",
    "vizdoom": "register_vizdoom_components",
    "dmlab": "register_dmlab_components",
    "envpool_atari": "register_atari_components",
    "envpool_mujoco": "register_mujoco_components",
}


@pytest.mark.parametrize("family", FAMILIES)
def test_sf2_entry_point_names_register_and_parse(family: str):
    """SF2's ``register_*_components()`` then ``parse_*(argv, evaluation)`` from the train script, SF2's names."""
    from sample_factory.envs.env_utils import get_make_env_func

    module = importlib.import_module(FAMILIES[family][0])
    getattr(module, REGISTRATION[family])()
    env = FAMILIES[family][2]
    assert callable(get_make_env_func(env))
    cfg = train_script_parser(family)(argv=argv_of(family), evaluation=True)
    assert cfg.env == env and cfg.max_num_episodes == 1e9  # an evaluation flag: the evaluation parser was used


def test_envpool_scripts_accept_sf2_env_names():
    parse = train_script_parser("envpool_atari")
    assert parse(argv=["--env=atari_breakout"]).env == "envpool_atari_breakout"


def test_doom_default_cfg_has_the_family_flags_and_defaults():
    from sf_examples.vizdoom.doom.doom_params import default_doom_cfg

    cfg = vars(default_doom_cfg())
    assert cfg["res_w"] == 128 and differences("vizdoom", cfg) == {}
