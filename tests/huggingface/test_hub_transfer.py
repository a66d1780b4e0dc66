"""Uploads and downloads through huggingface_hub's own client, against the local stand-in Hub."""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hub_helpers import make_experiment
from hub_stand_in import HubStandIn

from sample_factory.huggingface import load_from_hub, push_to_hub
from sample_factory.huggingface.hub_client import HubError, upload_folder
from sample_factory.huggingface.load_from_hub import load_experiment
from sample_factory.huggingface.upload import CardExtras, push_experiment
from sample_factory.utils.logging_setup import log

REPO = "me/cartpole-appo"
SHARED = ["config.json", "checkpoint_p0/checkpoint_000000007_1400.pth", "checkpoint_p1/checkpoint_000000007_1400.pth"]


def _push(hub: HubStandIn, folder: Path, **kwargs) -> str:
    return push_experiment(str(folder), REPO, CardExtras(**kwargs), endpoint=hub.endpoint, token=hub.token)


def _load(hub: HubStandIn, train_dir: Path, repo: str = REPO) -> str:
    return load_experiment(repo, str(train_dir), endpoint=hub.endpoint, token=hub.token)


def test_push_then_load_round_trips_the_experiment_bit_for_bit(hub: HubStandIn, tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp", num_policies=2)
    video = tmp_path / "clip.mp4"
    video.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(256)))
    url = _push(hub, folder, video_path=str(video))

    repo = hub.state.repos[REPO]
    assert url == f"{hub.endpoint}/{REPO}/commit/{repo.head}"
    assert sorted(repo.files) == sorted([*SHARED, "README.md", "replay.mp4"])
    checkpoint = (folder / SHARED[1]).read_bytes()
    assert hashlib.sha256(checkpoint).hexdigest() in hub.state.lfs_objects  # large files took the LFS route
    assert set(hub.state.validated_cards) == {repo.files["README.md"].decode()}  # the client had the card checked

    downloads = tmp_path / "downloads"
    loaded = Path(_load(hub, downloads))
    assert loaded == downloads / "cartpole-appo"
    for path in SHARED:
        assert (loaded / path).read_bytes() == (folder / path).read_bytes(), path
    assert (loaded / "replay.mp4").read_bytes() == video.read_bytes()
    assert sorted(p.name for p in downloads.iterdir()) == ["cartpole-appo"]  # no temporary folder left behind
    assert not (loaded / ".cache").exists()
    assert hub.state.unknown_requests == []


def test_pushing_again_adds_a_commit_with_the_newer_checkpoint(hub: HubStandIn, tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp")
    _push(hub, folder)
    newer = folder / "checkpoint_p0" / "checkpoint_000000009_1800.pth"
    newer.write_bytes((folder / "checkpoint_p0" / "checkpoint_000000007_1400.pth").read_bytes())
    _push(hub, folder)
    repo = hub.state.repos[REPO]
    assert len(repo.commits) == 3  # creation, then one commit per push
    assert "checkpoint_p0/checkpoint_000000009_1800.pth" in repo.files


def test_load_never_touches_an_existing_folder(hub: HubStandIn, tmp_path: Path) -> None:
    _push(hub, make_experiment(tmp_path / "train", "exp"))
    mine = tmp_path / "downloads" / "cartpole-appo"
    mine.mkdir(parents=True)
    (mine / "notes.txt").write_text("mine")
    with pytest.raises(HubError, match="cartpole-appo already exists and is left as it is: pass another -d"):
        _load(hub, tmp_path / "downloads")
    assert [p.name for p in mine.iterdir()] == ["notes.txt"]
    assert sorted(p.name for p in (tmp_path / "downloads").iterdir()) == ["cartpole-appo"]


def test_load_of_a_missing_repository_names_it_and_keeps_nothing(hub: HubStandIn, tmp_path: Path) -> None:
    with pytest.raises(HubError, match=f"no model repository me/nothing at {hub.endpoint}"):
        _load(hub, tmp_path / "downloads", "me/nothing")
    assert list((tmp_path / "downloads").iterdir()) == []


def test_load_of_a_repository_that_is_not_an_experiment_keeps_nothing(hub: HubStandIn, tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "weights.bin").write_bytes(b"1234")
    upload_folder(str(other), "me/other", commit_message="x", endpoint=hub.endpoint, token=hub.token)
    with pytest.raises(HubError, match="me/other has no config.json, so it is not a sample_factory experiment"):
        _load(hub, tmp_path / "downloads", "me/other")
    assert list((tmp_path / "downloads").iterdir()) == []


def test_push_with_a_token_the_hub_refuses_says_how_to_log_in(hub: HubStandIn, tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp")
    with pytest.raises(HubError, match="uploading to me/cartpole-appo at .* failed: .*401.*hf auth login"):
        push_experiment(str(folder), REPO, endpoint=hub.endpoint, token="hf_wrong")
    assert hub.state.tokens_seen == ["hf_wrong"] and hub.state.repos == {}


@pytest.mark.parametrize(
    ("main", "argv"),
    [
        (push_to_hub.main, ["-r", REPO, "-d", "anything"]),
        (load_from_hub.main, ["-r", REPO, "-d", "anything"]),
    ],
)
def test_missing_huggingface_hub_is_one_error_naming_the_extra(
    main, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, errors: list[str]
) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # what Python does when the package is absent
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 1
    assert len(errors) == 1
    assert "needs the Python package 'huggingface_hub', which is not installed" in errors[0]
    assert 'Install it with: pip install "sample-factory[huggingface]"' in errors[0]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("repo_id", ["cartpole", "me/", "me/car pole", "me/../x", "a/b/c"])
def test_push_refuses_a_malformed_repository_id(repo_id: str, tmp_path: Path, errors: list[str]) -> None:
    assert push_to_hub.main(["-r", repo_id, "-d", str(tmp_path)]) == 1
    assert errors and ("is not a Hub repository id: use USER/REPO" in errors[0] or "is empty" in errors[0])


class _ErrorRecords(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def errors() -> Iterator[list[str]]:
    """Errors the scripts log (the package logger does not propagate to pytest's caplog)."""
    handler = _ErrorRecords()
    log.addHandler(handler)
    try:
        yield handler.messages
    finally:
        log.removeHandler(handler)


def test_push_script_says_how_to_skip_a_replay_it_cannot_record(tmp_path: Path, errors: list[str]) -> None:
    pytest.importorskip("huggingface_hub")
    folder = make_experiment(tmp_path / "train", "exp", env="NoSuchEnv-v0")
    assert push_to_hub.main(["-r", REPO, "-d", str(folder)]) == 1
    assert errors[-1].startswith("cannot record a replay of NoSuchEnv-v0: ")
    assert "Pass --no_video to upload without one" in errors[-1]
    assert not (folder / "replay.mp4").exists()
