"""Each validation rule rejects a bad config with a message that names the flag and the fix."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest
import torch

from sample_factory.cfg.arguments import default_cfg
from sample_factory.cfg.validation import (
    ConfigError,
    hf_repository_problem,
    hub_upload_problems,
    unavailable_feature_problems,
    validate_cfg,
    warn_about_hub_flags,
)
from sample_factory.utils.attr_dict import AttrDict


@pytest.fixture
def cfg(tmp_path: Path):
    cfg = default_cfg(experiment="exp")
    cfg.train_dir = str(tmp_path / "train_dir")
    cfg.device = "cpu"
    return cfg


def _with(cfg, **overrides):
    for name, value in overrides.items():
        setattr(cfg, name, value)
    return cfg


def test_valid_config_passes_and_creates_train_dir(cfg) -> None:
    validate_cfg(cfg)
    assert os.path.isdir(cfg.train_dir)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"num_envs_per_worker": 3, "worker_num_splits": 2},
            "--num_envs_per_worker=3 must be a multiple of --worker_num_splits=2: use --num_envs_per_worker=4",
        ),
        (
            {"batch_size": 1000, "recurrence": 32},
            "--batch_size=1000 must be a multiple of --recurrence=32: use --batch_size=1024 or change --recurrence",
        ),
        (
            {"batch_size": 1000, "recurrence": -1, "rollout": 32, "use_rnn": True},
            "--batch_size=1000 must be a multiple of --recurrence=32: use --batch_size=1024 or change --recurrence",
        ),
        (
            {"rollout": 48, "recurrence": 32, "batch_size": 1024},
            "--rollout=48 must be a multiple of --recurrence=32: use --rollout=64 or change --recurrence",
        ),
        (
            {"with_vtrace": True, "rollout": 32, "recurrence": 16},
            "--with_vtrace=True needs --recurrence equal to --rollout=32 (got --recurrence=16)",
        ),
        (
            {"env_gpu_actions": True, "batched_sampling": False},
            "--env_gpu_actions=True needs --batched_sampling=True (the non-batched sampler passes each env plain "
            "per-agent actions, never a GPU tensor): add --batched_sampling=True or drop --env_gpu_actions",
        ),
        ({"recurrence": 0}, "--recurrence=0 must be >= 1"),
        ({"experiment": ".."}, "--experiment='..' must name a sub-folder of --train_dir"),
        ({"experiment": ""}, "--experiment='' must name a sub-folder of --train_dir"),
    ],
    ids=[
        "env_splits",
        "batch_recurrence",
        "batch_auto_recurrence",
        "rollout",
        "vtrace",
        "gpu_actions_non_batched",
        "recurrence0",
        "up",
        "empty",
    ],
)
def test_rule_names_flag_and_fix(cfg, overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        validate_cfg(_with(cfg, **overrides))
    assert message in str(error.value)


@pytest.mark.parametrize(
    "name",
    [
        "num_batches_per_epoch",
        "batch_size",
        "rollout",
        "num_workers",
        "num_envs_per_worker",
        "worker_num_splits",
        "num_policies",
        "num_epochs",
    ],
)
@pytest.mark.parametrize("value", [0, -3])
def test_counts_must_be_positive(cfg, name: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"--{name}={value} must be >= 1"):
        validate_cfg(_with(cfg, **{name: value}))


def test_batched_sampling_accepts_any_split_layout_and_gpu_actions(cfg) -> None:
    validate_cfg(_with(cfg, batched_sampling=True, num_envs_per_worker=8, worker_num_splits=2))
    validate_cfg(_with(cfg, batched_sampling=True, env_gpu_actions=True))


def test_vtrace_with_recurrence_equal_to_rollout_is_fine(cfg) -> None:
    validate_cfg(_with(cfg, with_vtrace=True, rollout=32, recurrence=32))


def test_all_problems_are_reported_together(cfg) -> None:
    with pytest.raises(ConfigError) as error:
        validate_cfg(_with(cfg, num_envs_per_worker=3, batch_size=1000))
    text = str(error.value)
    assert "--num_envs_per_worker=3" in text and "--batch_size=1000" in text


def test_unwritable_train_dir_names_the_path(cfg, tmp_path: Path) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    cfg.train_dir = str(blocker / "train_dir")  # fails even as root, unlike a read-only folder
    with pytest.raises(ConfigError) as error:
        validate_cfg(cfg)
    assert f"--train_dir={cfg.train_dir} is not writable" in str(error.value)
    assert "pass --train_dir=" in str(error.value)


def test_gpu_without_cuda_falls_back_to_cpu_with_warning(cfg, sf_log, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    validate_cfg(_with(cfg, device="gpu"))
    assert cfg.device == "cpu"
    assert "--device=gpu" in sf_log.text(logging.WARNING)


def test_gpu_with_cuda_is_kept(cfg, sf_log, monkeypatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    validate_cfg(_with(cfg, device="gpu"))
    assert cfg.device == "gpu"
    assert sf_log.messages(logging.WARNING) == []


def test_config_error_is_a_value_error() -> None:
    assert issubclass(ConfigError, ValueError)


def test_push_to_hub_is_refused_by_tools_that_do_not_upload(cfg) -> None:
    cfg.push_to_hub, cfg.hf_repository = True, "me/model"
    message = "--push_to_hub: uploading to the Hugging Face Hub is not available in this tool. Record and upload"
    with pytest.raises(ConfigError, match=message):
        validate_cfg(cfg)
    (problem,) = unavailable_feature_problems(cfg)
    assert "python -m sample_factory.huggingface.push_to_hub -r USER/REPO -d TRAIN_DIR/EXPERIMENT" in problem


def test_push_to_hub_with_a_repository_is_accepted_where_uploading_happens() -> None:
    hub_cfg = AttrDict(push_to_hub=True, hf_repository="me/cartpole-appo")
    assert unavailable_feature_problems(hub_cfg, uploads_to_hub=True) == []


def test_push_to_hub_needs_a_repository() -> None:
    problems = unavailable_feature_problems(AttrDict(push_to_hub=True, hf_repository=None), uploads_to_hub=True)
    assert problems == ["--push_to_hub needs --hf_repository=USER/REPO, the Hub repository to upload to (created if "
                        "missing)"]  # fmt: skip


@pytest.mark.parametrize("repo_id", ["cartpole", "me/", "/cartpole", "me/car pole", "me/../x", "a/b/c", "-me/x"])
def test_malformed_hub_repository_is_refused(repo_id: str) -> None:
    problems = hub_upload_problems(AttrDict(push_to_hub=True, hf_repository=repo_id))
    assert problems == [
        f"--hf_repository={repo_id} is not a Hub repository id: use USER/REPO (letters, digits, '-', '_' and '.', "
        "each part starting with a letter or digit, the name at most 96 characters)"
    ]


@pytest.mark.parametrize("repo_id", ["me/cartpole", "Org-1/doom_health.gathering-v2", "a/" + "x" * 96])
def test_well_formed_hub_repository_passes(repo_id: str) -> None:
    assert hf_repository_problem(repo_id) is None


def test_name_longer_than_the_hub_allows_is_refused() -> None:
    assert "at most 96 characters" in hf_repository_problem("a/" + "x" * 97)


def test_push_to_hub_without_huggingface_hub_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # what Python does when the package is absent
    problems = hub_upload_problems(AttrDict(push_to_hub=True, hf_repository="me/model"))
    assert problems == [
        "--push_to_hub needs the huggingface_hub package, which is not installed: run pip install "
        '"sample-factory[huggingface]"'
    ]


def test_push_to_hub_without_save_video_is_reported(sf_log) -> None:
    warn_about_hub_flags(AttrDict(push_to_hub=True, save_video=False, cli_args={"push_to_hub": True}))
    assert "--push_to_hub without --save_video: the model card will have no replay video" in sf_log.text()
    sf_log.records.clear()
    warn_about_hub_flags(AttrDict(push_to_hub=True, save_video=True, hf_repository="me/x", cli_args={}))
    assert sf_log.records == []


def test_pbt_parameters_without_pbt_are_reported(cfg, caplog) -> None:
    cfg.cli_args = {"pbt_mutation_rate": 0.3, "learning_rate": 1e-3}
    with caplog.at_level(logging.WARNING):
        validate_cfg(cfg)
    assert "--pbt_mutation_rate only take effect with --with_pbt=True" in caplog.text
    assert "learning_rate" not in caplog.text


def test_pbt_parameters_with_pbt_are_not_reported(cfg, caplog) -> None:
    cfg.with_pbt, cfg.num_policies = True, 2
    cfg.cli_args = {"pbt_mutation_rate": 0.3, "with_pbt": True}
    with caplog.at_level(logging.WARNING):
        validate_cfg(cfg)
    assert "only take effect with --with_pbt" not in caplog.text


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"pbt_mutation_rate": 1.5}, "--pbt_mutation_rate=1.5 is a probability"),
        ({"pbt_replace_fraction": 0.7}, "--pbt_replace_fraction=0.7 must be in \\[0, 0.5\\]"),
        ({"pbt_perturb_min": 0.9}, "need 1 <= pbt_perturb_min <= pbt_perturb_max"),
        ({"pbt_perturb_min": 2.0, "pbt_perturb_max": 1.5}, "need 1 <= pbt_perturb_min <= pbt_perturb_max"),
        ({"pbt_period_env_steps": 0}, "--pbt_period_env_steps=0 must be >= 1"),
    ],
)
def test_pbt_values_out_of_range_are_refused(cfg, overrides: dict, message: str) -> None:
    cfg.with_pbt, cfg.num_policies = True, 2
    for key, value in overrides.items():
        setattr(cfg, key, value)
    with pytest.raises(ConfigError, match=message):
        validate_cfg(cfg)


@pytest.mark.parametrize("algo", ["PPO", "foo"])
def test_algorithms_other_than_appo_are_refused(cfg, algo: str) -> None:
    with pytest.raises(ConfigError, match=f"--algo={algo}: only APPO is implemented"):
        validate_cfg(_with(cfg, algo=algo))


def test_appo_is_accepted(cfg) -> None:
    validate_cfg(_with(cfg, algo="APPO"))


@pytest.mark.parametrize("pixel_format", ["CHW", "HWC"])
def test_known_pixel_formats_pass(cfg, pixel_format: str) -> None:
    validate_cfg(_with(cfg, pixel_format=pixel_format))


def test_unknown_pixel_format_is_refused(cfg) -> None:
    with pytest.raises(ConfigError, match="--pixel_format=chw is not a layout: pass --pixel_format=CHW"):
        validate_cfg(_with(cfg, pixel_format="chw"))


def test_actor_worker_gpus_in_serial_mode_is_reported(cfg, sf_log) -> None:
    validate_cfg(_with(cfg, serial_mode=True, actor_worker_gpus=[0]))
    assert "--actor_worker_gpus has no effect in serial mode" in sf_log.text(logging.WARNING)


def test_actor_worker_gpus_in_parallel_mode_is_not_reported(cfg, sf_log) -> None:
    validate_cfg(_with(cfg, serial_mode=False, actor_worker_gpus=[0]))
    assert "actor_worker_gpus" not in sf_log.text(logging.WARNING)


def test_hf_repository_without_push_to_hub_is_reported(sf_log) -> None:
    warn_about_hub_flags(AttrDict(cli_args={"hf_repository": "me/model"}))
    assert "--hf_repository only takes effect with --push_to_hub" in sf_log.text(logging.WARNING)


def test_env_problems_raise_a_config_error_naming_the_flag(cfg) -> None:
    from gymnasium import spaces

    from sample_factory.cfg.validation import require_cfg_fits_env
    from sample_factory.utils.attr_dict import AttrDict

    box_actions = AttrDict(obs_space=spaces.Box(-1, 1, (3,)), action_space=spaces.Box(-1, 1, (2,)))
    require_cfg_fits_env(cfg, box_actions)  # the default exploration loss fits continuous actions
    with pytest.raises(ConfigError, match="--exploration_loss=symmetric_kl works only with discrete actions"):
        require_cfg_fits_env(_with(cfg, exploration_loss="symmetric_kl"), box_actions)
