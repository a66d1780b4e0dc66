"""The documented commands, run as a user runs them, against the local stand-in Hub.

enjoy records a replay and pushes (``--push_to_hub``), ``load_from_hub`` downloads into a new train_dir, and the
enjoy command the model card names runs on the download; ``push_to_hub`` records a replay itself when the
experiment has none. Each command runs in its own process (``sf_run``: nothing may outlive it).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hub_helpers import ENV, make_experiment
from hub_stand_in import HubStandIn
from sf_run import run_module

REPO = "me/cartpole-appo"
SHARED = ["config.json", "checkpoint_p0/checkpoint_000000007_1400.pth"]


@pytest.fixture(autouse=True)
def _video_packages() -> None:
    """Replays are CartPole frames (pygame) written by OpenCV (the video extra)."""
    pytest.importorskip("cv2")
    pytest.importorskip("pygame")


def test_enjoy_pushes_then_load_from_hub_gives_an_experiment_enjoy_runs_on(
    hub_cli_env: HubStandIn, tmp_path: Path
) -> None:
    hub = hub_cli_env
    folder = make_experiment(tmp_path / "train", "exp", use_rnn=False)
    watch = ["--env=" + ENV, "--experiment=exp", f"--train_dir={tmp_path / 'train'}", "--max_num_episodes=2"]
    pushed = run_module(
        "sf_examples.enjoy_gym_env", [*watch, "--save_video", "--push_to_hub", f"--hf_repository={REPO}"]
    )
    assert pushed.returncode == 0, pushed.explain()
    repo = hub.state.repos[REPO]
    assert sorted(repo.files) == sorted([*SHARED, "README.md", "replay.mp4"])
    assert repo.files["replay.mp4"] == (folder / "replay.mp4").read_bytes()
    card = repo.files["README.md"].decode()
    assert "over 2 episodes of the run that recorded the replay below (policy 0)" in card

    downloads = tmp_path / "downloads"
    loaded = run_module("sample_factory.huggingface.load_from_hub", ["-r", REPO, "-d", str(downloads)])
    assert loaded.returncode == 0, loaded.explain()
    enjoy_command = (
        f"python -m sf_examples.enjoy_gym_env --env={ENV} --experiment=cartpole-appo --train_dir={downloads}"
    )
    assert f"Watch it: {enjoy_command}" in loaded.output
    for path in SHARED:
        assert (downloads / "cartpole-appo" / path).read_bytes() == (folder / path).read_bytes(), path

    args = enjoy_command.split()[3:]
    watched = run_module("sf_examples.enjoy_gym_env", [*args, "--no_render", "--max_num_episodes=2"])
    assert watched.returncode == 0, watched.explain()
    assert "Loaded checkpoint" in watched.output and "Avg episode reward" in watched.output


def test_push_script_records_a_replay_when_the_experiment_has_none(hub_cli_env: HubStandIn, tmp_path: Path) -> None:
    hub = hub_cli_env
    folder = make_experiment(tmp_path / "train", "exp", use_rnn=False)
    args = ["-r", REPO, "-d", str(folder), "--max_num_episodes=3", "--video_frames=200"]
    pushed = run_module("sample_factory.huggingface.push_to_hub", args)
    assert pushed.returncode == 0, pushed.explain()
    assert (folder / "replay.mp4").is_file()  # kept in the experiment, as enjoy --save_video keeps it
    repo = hub.state.repos[REPO]
    assert repo.files["replay.mp4"] == (folder / "replay.mp4").read_bytes()
    assert "Evaluation: mean episode reward" in repo.files["README.md"].decode()


def test_push_without_a_token_says_how_to_log_in(
    hub: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))  # no saved login
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    folder = make_experiment(tmp_path / "train", "exp")
    pushed = run_module("sample_factory.huggingface.push_to_hub", ["-r", REPO, "-d", str(folder), "--no_video"])
    assert pushed.returncode == 1, pushed.explain()
    assert (
        f"no Hugging Face token found to upload {REPO} to {hub.endpoint}: log in with `hf auth login`" in pushed.output
    )
    assert "Traceback" not in pushed.output
    assert hub.state.repos == {}
