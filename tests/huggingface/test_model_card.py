"""What an upload holds and what its model card says, checked without any network."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hub_helpers import ENV, make_experiment
from hub_stand_in import model_card_metadata, model_card_metadata_problem

from sample_factory.huggingface.card_facts import (
    Evaluation,
    flags_differing_from_defaults,
    scripts_for,
    training_defaults,
)
from sample_factory.huggingface.experiment_reader import ExperimentFolderError, last_logged_reward, read_experiment
from sample_factory.huggingface.upload import CardExtras, stage_experiment
from sample_factory.utils.attr_dict import AttrDict

LOG_LINES = (
    "[2026-01-01 10:00:00,000][1] Avg episode reward: [(0, '12.500'), (1, '3.250')]\n"
    "[2026-01-01 10:00:05,000][1] Fps is (10 sec: 100.0). Total num frames: 1400.\n"
    "[2026-01-01 10:00:10,000][1] Avg episode reward: [(0, '21.125'), (1, '-4.000')]\n"
)


def _stage(folder: Path, tmp_path: Path, **kwargs) -> tuple[list[str], Path, str]:
    staging = tmp_path / "staging"
    staging.mkdir()
    files = stage_experiment(read_experiment(str(folder)), "me/cartpole-appo", str(staging), CardExtras(**kwargs))
    return files, staging, (staging / "README.md").read_text()


def test_upload_holds_the_card_config_latest_checkpoints_and_video_only(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp", num_policies=2)
    old = folder / "checkpoint_p0" / "checkpoint_000000003_600.pth"
    shutil.copyfile(folder / "checkpoint_p0" / "checkpoint_000000007_1400.pth", old)
    (folder / "sf_log.txt").write_text(LOG_LINES)
    (folder / "env_info.pkl").write_bytes(b"pickle")
    (folder / ".summary" / "0").mkdir(parents=True)
    video = tmp_path / "elsewhere.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42 frames")

    files, staging, _ = _stage(folder, tmp_path, video_path=str(video))

    expected = [
        "README.md",
        "config.json",
        "checkpoint_p0/checkpoint_000000007_1400.pth",
        "checkpoint_p1/checkpoint_000000007_1400.pth",
        "replay.mp4",
    ]
    assert files == expected
    on_disk = sorted(str(p.relative_to(staging)) for p in staging.rglob("*") if p.is_file())
    assert on_disk == sorted(expected)
    for path in expected[1:4]:
        assert (staging / path).read_bytes() == (folder / path).read_bytes()
    assert (staging / "replay.mp4").read_bytes() == video.read_bytes()
    assert sorted(p.name for p in folder.iterdir()) == [  # the experiment folder is left as it was
        ".summary",
        "checkpoint_p0",
        "checkpoint_p1",
        "config.json",
        "env_info.pkl",
        "sf_log.txt",
    ]


def test_card_states_env_rewards_with_sources_video_and_commands(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp", num_policies=2)
    (folder / "sf_log.txt").write_text(LOG_LINES)
    best = folder / "checkpoint_p1" / "best_000000007_1400_reward_42.500.pth"
    shutil.copyfile(folder / "checkpoint_p1" / "checkpoint_000000007_1400.pth", best)
    video = tmp_path / "replay.mp4"
    video.write_bytes(b"mp4")

    _, _, card = _stage(folder, tmp_path, video_path=str(video), evaluation=Evaluation((10.0, 20.0, 30.0)))

    assert "# APPO agent for CartPole-v1" in card
    assert "| 0 | 1400 | 7 | 21.125 (reward) | last 'Avg episode reward' of sf_log.txt |" in card
    assert "| 1 | 1400 | 7 | 42.500 (reward) | best checkpoint best_000000007_1400_reward_42.500.pth |" in card
    assert "mean episode reward **20.000 ± 8.165** over 3 episodes" in card
    assert '<video controls autoplay loop muted src="replay.mp4"></video>' in card
    assert "python -m sample_factory.huggingface.load_from_hub -r me/cartpole-appo -d ./train_dir" in card
    assert (
        "python -m sf_examples.enjoy_gym_env --env=CartPole-v1 --experiment=cartpole-appo --train_dir=./train_dir"
        in card
    )
    assert "python -m sf_examples.train_gym_env --env=CartPole-v1 --experiment=cartpole-appo" in card
    metadata = model_card_metadata(card)
    assert metadata["library_name"] == "sample-factory"
    (result,) = metadata["model-index"][0]["results"]
    assert result["dataset"]["name"] == ENV
    assert result["metrics"][0] == {"type": "mean_reward", "value": "20.00 +/- 8.16", "name": "mean_reward",
                                    "verified": False}  # fmt: skip
    assert model_card_metadata_problem(card) is None


def test_card_without_evaluation_or_video_says_so_and_uses_the_training_reward(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp")
    (folder / "sf_log.txt").write_text(LOG_LINES)
    files, _, card = _stage(folder, tmp_path)
    assert "replay.mp4" not in files
    assert "No replay video was uploaded with this agent." in card and "<video" not in card
    assert "Evaluation:" not in card
    assert model_card_metadata(card)["model-index"][0]["results"][0]["metrics"][0]["value"] == "21.12"


def test_card_without_any_reward_has_no_metric(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp")
    _, _, card = _stage(folder, tmp_path)
    assert "| 0 | 1400 | 7 | not recorded |  |" in card
    assert "model-index" not in model_card_metadata(card)


def test_card_lists_typed_and_changed_flags_with_their_defaults(tmp_path: Path) -> None:
    folder = make_experiment(
        tmp_path / "train",
        "exp",
        cli_args={"num_workers": 3, "learning_rate": 0.001},
        num_workers=3,
        learning_rate=0.001,
        gamma=0.95,
    )
    _, _, card = _stage(folder, tmp_path)
    assert "| `--num_workers`* | 3 | 2 |" in card
    assert "| `--gamma` | 0.95 | 0.99 |" in card  # changed without being typed: still listed, without the star
    assert "| `--learning_rate`* | 0.001 | 0.001 |" in card  # typed: listed even when equal to the default
    assert "`--train_dir`" not in card and "`--experiment`" not in card and "`--cli_args`" not in card


def test_unreadable_newest_checkpoint_is_not_shared(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp")
    (folder / "checkpoint_p0" / "checkpoint_000000009_1800.pth").write_bytes(b"truncated")
    summary = read_experiment(str(folder))
    assert [c.relative_path for c in summary.checkpoints] == ["checkpoint_p0/checkpoint_000000007_1400.pth"]


def test_folder_without_config_is_refused_naming_what_to_pass(tmp_path: Path) -> None:
    (tmp_path / "not_an_experiment").mkdir()
    with pytest.raises(ExperimentFolderError, match="has no config.json, so it is not an experiment folder"):
        read_experiment(str(tmp_path / "not_an_experiment"))
    with pytest.raises(ExperimentFolderError, match="is not a folder"):
        read_experiment(str(tmp_path / "missing"))


def test_policy_without_checkpoint_is_refused(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp", num_policies=2)
    shutil.rmtree(folder / "checkpoint_p1")
    with pytest.raises(ExperimentFolderError, match="policy 1 cannot be shared: it has no checkpoint_"):
        read_experiment(str(folder))


def test_last_logged_reward_takes_the_last_parsable_line(tmp_path: Path) -> None:
    log_file = tmp_path / "sf_log.txt"
    log_file.write_text(LOG_LINES + "[x][1] Avg episode reward: [(0, 'nan'\n")
    assert last_logged_reward(str(log_file)) == {0: 21.125, 1: -4.0}
    assert last_logged_reward(str(tmp_path / "none.txt")) == {}


def test_family_defaults_count_as_defaults() -> None:
    gym_defaults = training_defaults(ENV)
    core_defaults = training_defaults("an_env_no_family_owns_but_the_fallback")
    assert gym_defaults["rollout"] == 32  # the Gymnasium family's default
    config = AttrDict({**gym_defaults, "env": ENV, "cli_args": {}, "recurrence": 1})  # -1 resolved without an RNN
    assert flags_differing_from_defaults(config) == []
    assert core_defaults.keys() == gym_defaults.keys()


def test_scripts_follow_typed_then_saved_then_the_train_scripts_enjoy_twin() -> None:
    assert scripts_for(AttrDict(env=ENV)).enjoy == "sf_examples.enjoy_gym_env"
    vizdoom = scripts_for(AttrDict(env="doom_basic"))
    assert vizdoom.train == "sf_examples.vizdoom.train_vizdoom"
    assert vizdoom.enjoy == "sf_examples.vizdoom.enjoy_vizdoom"
    saved = AttrDict(env=ENV, train_script="my_pkg.train_it", enjoy_script="my_pkg.watch_it")
    assert scripts_for(saved) == scripts_for(AttrDict(env=ENV), "my_pkg.train_it", "my_pkg.watch_it")
    assert scripts_for(AttrDict(env=ENV), train_script="no_such_pkg.train_x").enjoy == "sf_examples.enjoy_gym_env"
