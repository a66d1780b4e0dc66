"""Every flag of the project's flag table parses with exactly its listed default, type, nargs and choices.

The table below is this test's own copy of the flag contract (columns: flag | type | default | nargs | choices |
scope, where scope ``eval`` marks flags that only ``parse_sf_args(evaluation=True)`` declares). A flag whose
declaration drifts from it fails here. Some entries go beyond Sample Factory 2.1.1's command line on purpose:
``--lr_schedule`` also lists ``linear_decay``, the schedule 2.1.1's MuJoCo and Atari families set as their default;
``--action_head``, ``--action_distribution`` and the evaluation-during-training flags (``--eval_every_env_steps`` ...)
are new, ``--agent_to_policy`` maps the agents of a multi-agent env to policies, ``--distributed_backend`` and
``--distributed_timeout`` tune distributed runs (docs/distributed.md), and ``--eval_deterministic``, an enjoy/eval
flag in 2.1.1, is declared for training too (the evaluator uses it).
"""

from __future__ import annotations

import argparse
import ast
import multiprocessing
import os
from dataclasses import dataclass
from typing import Any

import pytest

from sample_factory.cfg.arguments import parse_sf_args
from sample_factory.utils.utils import str2bool

FLAG_TABLE = """
--algo | str | 'APPO' |  |  |
--env | str | None |  |  |
--experiment | str | 'default_experiment' |  |  |
--train_dir | str | '<cwd>/train_dir' |  |  |
--restart_behavior | str | 'resume' |  | resume,restart,overwrite |
--device | str | 'gpu' |  | gpu,cpu |
--seed | int | None |  |  |
--num_policies | int | 1 |  |  |
--async_rl | str2bool | True |  |  |
--serial_mode | str2bool | False |  |  |
--batched_sampling | str2bool | False |  |  |
--num_batches_to_accumulate | int | 2 |  |  |
--worker_num_splits | int | 2 |  |  |
--policy_workers_per_policy | int | 1 |  |  |
--inference_batch_wait | str2bool | None |  |  |
--agent_to_policy | str | None |  |  |
--max_policy_lag | int | 1000 |  |  |
--num_workers | int | multiprocessing.cpu_count() |  |  |
--num_envs_per_worker | int | 2 |  |  |
--batch_size | int | 1024 |  |  |
--num_batches_per_epoch | int | 1 |  |  |
--num_epochs | int | 1 |  |  |
--rollout | int | 32 |  |  |
--recurrence | int | -1 |  |  |
--shuffle_minibatches | str2bool | False |  |  |
--gamma | float | 0.99 |  |  |
--reward_scale | float | 1.0 |  |  |
--reward_clip | float | 1000.0 |  |  |
--value_bootstrap | str2bool | False |  |  |
--normalize_returns | str2bool | True |  |  |
--exploration_loss_coeff | float | 0.003 |  |  |
--value_loss_coeff | float | 0.5 |  |  |
--kl_loss_coeff | float | 0.0 |  |  |
--exploration_loss | str | 'entropy' |  | entropy,symmetric_kl |
--gae_lambda | float | 0.95 |  |  |
--ppo_clip_ratio | float | 0.1 |  |  |
--ppo_clip_value | float | 1.0 |  |  |
--with_vtrace | str2bool | False |  |  |
--vtrace_rho | float | 1.0 |  |  |
--vtrace_c | float | 1.0 |  |  |
--optimizer | str | 'adam' |  | adam,lamb |
--adam_eps | float | 1e-06 |  |  |
--adam_beta1 | float | 0.9 |  |  |
--adam_beta2 | float | 0.999 |  |  |
--max_grad_norm | float | 4.0 |  |  |
--learning_rate | float | 0.0001 |  |  |
--lr_schedule | str | 'constant' |  | constant,kl_adaptive_minibatch,kl_adaptive_epoch,linear_decay |
--lr_schedule_kl_threshold | float | 0.008 |  |  |
--lr_adaptive_min | float | 1e-06 |  |  |
--lr_adaptive_max | float | 0.01 |  |  |
--obs_subtract_mean | float | 0.0 |  |  |
--obs_scale | float | 1.0 |  |  |
--normalize_input | str2bool | True |  |  |
--normalize_input_keys | str | None | * |  |
--decorrelate_experience_max_seconds | int | 0 |  |  |
--decorrelate_envs_on_one_worker | str2bool | True |  |  |
--actor_worker_gpus | int | [] | * |  |
--set_workers_cpu_affinity | str2bool | True |  |  |
--force_envs_single_thread | str2bool | False |  |  |
--default_niceness | int | 0 |  |  |
--log_to_file | str2bool | True |  |  |
--experiment_summaries_interval | int | 10 |  |  |
--flush_summaries_interval | int | 30 |  |  |
--stats_avg | int | 100 |  |  |
--summaries_use_frameskip | str2bool | True |  |  |
--heartbeat_interval | int | 20 |  |  |
--heartbeat_reporting_interval | int | 180 |  |  |
--heartbeat_timeout | int | 120 |  |  |
--max_restarts | int | 3 |  |  |
--max_restarts_total | int | 10 |  |  |
--env_error_behavior | str | 'recreate' |  | recreate,fail |
--distributed_backend | str | 'auto' |  | auto,gloo,nccl |
--distributed_timeout | int | 120 |  |  |
--train_for_env_steps | int | 10000000000 |  |  |
--train_for_seconds | int | 10000000000 |  |  |
--save_every_sec | int | 120 |  |  |
--keep_checkpoints | int | 2 |  |  |
--load_checkpoint_kind | str | 'latest' |  | latest,best |
--save_milestones_sec | int | -1 |  |  |
--save_best_every_sec | int | 5 |  |  |
--save_best_metric | str | 'reward' |  |  |
--save_best_after | int | 100000 |  |  |
--benchmark | str2bool | False |  |  |
--encoder_mlp_layers | int | [512, 512] | * |  |
--encoder_conv_architecture | str | 'convnet_simple' |  | convnet_simple,convnet_impala,convnet_atari,resnet_impala |
--encoder_conv_mlp_layers | int | [512] | * |  |
--use_rnn | str2bool | True |  |  |
--rnn_size | int | 512 |  |  |
--rnn_type | str | 'gru' |  | gru,lstm |
--rnn_num_layers | int | 1 |  |  |
--decoder_mlp_layers | int | [] | * |  |
--nonlinearity | str | 'elu' |  | elu,relu,tanh |
--policy_initialization | str | 'orthogonal' |  | orthogonal,xavier_uniform,torch_default |
--policy_init_gain | float | 1.0 |  |  |
--actor_critic_share_weights | str2bool | True |  |  |
--adaptive_stddev | str2bool | True |  |  |
--continuous_tanh_scale | float | 0.0 |  |  |
--initial_stddev | float | 1.0 |  |  |
--action_head | str | 'factorized' |  | factorized,autoregressive |
--action_distribution | str | 'default' |  |  |
--use_env_info_cache | str2bool | False |  |  |
--env_gpu_actions | str2bool | False |  |  |
--env_gpu_observations | str2bool | True |  |  |
--env_frameskip | int | 1 |  |  |
--env_framestack | int | 1 |  |  |
--pixel_format | str | 'CHW' |  |  |
--use_record_episode_statistics | str2bool | False |  |  |
--with_wandb | str2bool | False |  |  |
--wandb_user | str | None |  |  |
--wandb_project | str | 'sample_factory' |  |  |
--wandb_group | str | None |  |  |
--wandb_job_type | str | 'SF' |  |  |
--wandb_tags | str | [] | * |  |
--with_pbt | str2bool | False |  |  |
--pbt_mix_policies_in_one_env | str2bool | True |  |  |
--pbt_period_env_steps | int | 5000000 |  |  |
--pbt_start_mutation | int | 20000000 |  |  |
--pbt_replace_fraction | float | 0.3 |  |  |
--pbt_mutation_rate | float | 0.15 |  |  |
--pbt_replace_reward_gap | float | 0.1 |  |  |
--pbt_replace_reward_gap_absolute | float | 1e-06 |  |  |
--pbt_optimize_gamma | str2bool | False |  |  |
--pbt_target_objective | str | 'true_objective' |  |  |
--pbt_perturb_min | float | 1.1 |  |  |
--pbt_perturb_max | float | 1.5 |  |  |
--eval_every_env_steps | int | 0 |  |  |
--eval_env | str | None |  |  |
--eval_episodes | int | 10 |  |  |
--eval_num_envs | int | 10 |  |  |
--eval_deterministic | str2bool | False |  |  |
--fps | int | 0 |  |  | eval
--eval_env_frameskip | int | None |  |  | eval
--no_render | flag | False |  |  | eval
--save_video | flag | False |  |  | eval
--video_frames | int | 1000000000.0 |  |  | eval
--video_name | str | None |  |  | eval
--max_num_frames | int | 1000000000.0 |  |  | eval
--max_num_episodes | int | 1000000000.0 |  |  | eval
--push_to_hub | flag | False |  |  | eval
--hf_repository | str | None |  |  | eval
--policy_index | int | 0 |  |  | eval
--train_script | str | None |  |  | eval
--enjoy_script | str | None |  |  | eval
--train_in_background_thread | str2bool | True |  |  |
--ppo_epochs | int | (alias) |  |  |
--num_minibatches_to_accumulate | int | (alias) |  |  |
--reset_timeout_seconds | int | 120 |  |  |
--learner_main_loop_num_cores | int | 1 |  |  |
"""

SPECIAL_DEFAULTS = {
    "'<cwd>/train_dir'": lambda: os.path.join(os.getcwd(), "train_dir"),
    "multiprocessing.cpu_count()": multiprocessing.cpu_count,
}
TYPES = {"int": int, "float": float, "str": str, "str2bool": str2bool}


@dataclass(frozen=True)
class FlagSpec:
    flag: str
    type_name: str
    default_text: str
    nargs: str | None
    choices: list[str] | None
    eval_only: bool

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--")

    @property
    def is_alias(self) -> bool:
        return self.default_text == "(alias)"

    def expected_default(self) -> Any:
        if self.default_text in SPECIAL_DEFAULTS:
            return SPECIAL_DEFAULTS[self.default_text]()
        return ast.literal_eval(self.default_text)


def _load_table() -> list[FlagSpec]:
    specs = []
    for line in FLAG_TABLE.strip().splitlines():
        flag, type_name, default_text, nargs, choices, scope = (cell.strip() for cell in line.split("|"))
        specs.append(
            FlagSpec(
                flag, type_name, default_text, nargs or None, choices.split(",") if choices else None, scope == "eval"
            )
        )
    return specs


SPECS = _load_table()
VALUE_SPECS = [spec for spec in SPECS if not spec.is_alias]


def _parser(evaluation: bool) -> argparse.ArgumentParser:
    parser, _ = parse_sf_args([], evaluation=evaluation)
    return parser


def _action(parser: argparse.ArgumentParser, flag: str) -> argparse.Action:
    return parser._option_string_actions[flag]


def _parse_one(spec: FlagSpec, *args: str) -> Any:
    _, partial = parse_sf_args(list(args), evaluation=spec.eval_only)
    return getattr(partial, spec.dest)


def test_table_is_complete() -> None:
    assert len(SPECS) == 148
    assert len({spec.flag for spec in SPECS}) == len(SPECS)


@pytest.mark.parametrize("evaluation", [False, True])
def test_parser_declares_exactly_the_table(evaluation: bool) -> None:
    expected = {spec.flag for spec in SPECS if evaluation or not spec.eval_only}
    declared = {option for option in _parser(evaluation)._option_string_actions if option.startswith("--")}
    assert declared == expected


@pytest.mark.parametrize("spec", VALUE_SPECS, ids=lambda spec: spec.flag)
def test_default_value_and_its_type(spec: FlagSpec) -> None:
    _, partial = parse_sf_args([], evaluation=spec.eval_only)
    actual = getattr(partial, spec.dest)
    expected = spec.expected_default()
    assert actual == expected
    assert type(actual) is type(expected)


@pytest.mark.parametrize("spec", VALUE_SPECS, ids=lambda spec: spec.flag)
def test_declared_type_nargs_and_choices(spec: FlagSpec) -> None:
    action = _action(_parser(spec.eval_only), spec.flag)
    if spec.type_name == "flag":
        assert isinstance(action, argparse._StoreTrueAction)  # takes no value: argparse sets nargs=0
    else:
        assert action.type is TYPES[spec.type_name]
        assert action.nargs == spec.nargs
    assert (list(action.choices) if action.choices is not None else None) == spec.choices


@pytest.mark.parametrize("spec", [s for s in VALUE_SPECS if s.choices], ids=lambda spec: spec.flag)
def test_every_choice_parses_and_others_are_rejected(spec: FlagSpec) -> None:
    for choice in spec.choices:
        assert _parse_one(spec, f"{spec.flag}={choice}") == choice
    with pytest.raises(SystemExit):
        _parse_one(spec, f"{spec.flag}=not_a_choice")


SAMPLE_VALUES = {"int": ("7", 7), "float": ("0.25", 0.25), "str": ("abc", "abc"), "str2bool": ("false", False)}


@pytest.mark.parametrize("spec", [s for s in VALUE_SPECS if not s.choices], ids=lambda spec: spec.flag)
def test_command_line_value_is_converted(spec: FlagSpec) -> None:
    if spec.type_name == "flag":
        assert _parse_one(spec, spec.flag) is True
        return
    text, value = SAMPLE_VALUES[spec.type_name]
    if spec.nargs == "*":
        assert _parse_one(spec, spec.flag, text, text) == [value, value]
        assert _parse_one(spec, spec.flag) == []
    else:
        parsed = _parse_one(spec, f"{spec.flag}={text}")
        assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("spec", [s for s in VALUE_SPECS if s.type_name in ("int", "str2bool")], ids=lambda s: s.flag)
def test_malformed_value_is_rejected(spec: FlagSpec) -> None:
    bad = "1.5" if spec.type_name == "int" else "maybe"
    with pytest.raises(SystemExit):
        _parse_one(spec, spec.flag, bad)


@pytest.mark.parametrize("spec", [s for s in SPECS if s.eval_only], ids=lambda spec: spec.flag)
def test_evaluation_flags_only_with_evaluation(spec: FlagSpec) -> None:
    _, training = parse_sf_args([], evaluation=False)
    assert not hasattr(training, spec.dest)
    assert spec.flag not in _parser(False)._option_string_actions


@pytest.mark.parametrize("spec", [s for s in SPECS if s.is_alias], ids=lambda spec: spec.flag)
def test_legacy_alias_is_declared_with_type_and_no_default(spec: FlagSpec) -> None:
    action = _action(_parser(False), spec.flag)
    assert action.type is TYPES[spec.type_name]
    assert action.default is argparse.SUPPRESS
    assert _parse_one(spec, f"{spec.flag}=5") == 5
