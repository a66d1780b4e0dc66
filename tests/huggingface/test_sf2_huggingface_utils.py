"""Sample Factory 2's Hub functions (``sample_factory.huggingface.huggingface_utils``): the model card, the replay
video, and an upload and download through the local stand-in Hub."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hub_helpers import make_experiment
from hub_stand_in import HubStandIn

from sample_factory.huggingface.hub_client import HubError
from sample_factory.huggingface.huggingface_utils import (
    generate_model_card,
    generate_replay_video,
    load_from_hf,
    push_to_hf,
)
from sample_factory.utils.attr_dict import AttrDict

REPO = "me/cartpole-sf2-names"


def _frames(count: int, height: int = 48, width: int = 64) -> list[np.ndarray]:
    return [np.full((height, width, 3), 20 * i, dtype=np.uint8) for i in range(count)]


def test_generate_model_card_states_the_given_facts(tmp_path: Path) -> None:
    folder = make_experiment(tmp_path, "exp")
    path = generate_model_card(
        str(folder), "APPO", "CartPole-v1", REPO, rewards=[10.0, 30.0], train_name="my_pkg.train_cartpole"
    )
    assert Path(path) == folder / "README.md"
    card = Path(path).read_text()
    assert "library_name: sample-factory" in card
    assert "# APPO agent for CartPole-v1" in card
    assert "mean episode reward **20.000 ± 10.000** over 2 episodes" in card
    assert f"load_from_hub -r {REPO}" in card
    assert "python -m my_pkg.train_cartpole --env=CartPole-v1" in card
    assert "No replay video was uploaded" in card  # the folder has no replay.mp4

    (folder / "replay.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42")
    card = Path(generate_model_card(str(folder), "APPO", "CartPole-v1", REPO)).read_text()
    assert 'src="replay.mp4"' in card and "mean episode reward" not in card


def test_generate_replay_video_writes_every_frame(tmp_path: Path) -> None:
    cv2 = pytest.importorskip("cv2")
    path = generate_replay_video(str(tmp_path), _frames(5), fps=15)
    assert Path(path) == tmp_path / "replay.mp4"
    video = cv2.VideoCapture(path)
    try:
        assert int(video.get(cv2.CAP_PROP_FRAME_COUNT)) == 5
        assert (int(video.get(cv2.CAP_PROP_FRAME_WIDTH)), int(video.get(cv2.CAP_PROP_FRAME_HEIGHT))) == (64, 48)
        assert video.get(cv2.CAP_PROP_FPS) == pytest.approx(15.0)
        ok, last = None, None
        for _ in range(5):
            ok, last = video.read()
        assert ok and abs(float(last.mean()) - 80.0) < 4.0  # the fifth frame's grey level survived encoding
    finally:
        video.release()

    named = generate_replay_video(str(tmp_path), _frames(1), fps=15, cfg=AttrDict(video_name="clips/ep.mp4"))
    assert Path(named) == tmp_path / "clips" / "ep.mp4" and Path(named).stat().st_size > 0
    with pytest.raises(ValueError, match="no frames"):
        generate_replay_video(str(tmp_path), [], fps=15)


def test_push_to_hf_then_load_from_hf(hub: HubStandIn, tmp_path: Path) -> None:
    folder = make_experiment(tmp_path / "train", "exp")
    (folder / "replay.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(range(64)))
    url = push_to_hf(str(folder), REPO, endpoint=hub.endpoint, token=hub.token)
    repo = hub.state.repos[REPO]
    assert url == f"{hub.endpoint}/{REPO}/commit/{repo.head}"
    assert sorted(repo.files) == [
        "README.md",
        "checkpoint_p0/checkpoint_000000007_1400.pth",
        "config.json",
        "replay.mp4",
    ]

    loaded = Path(load_from_hf(str(tmp_path / "downloads"), REPO, endpoint=hub.endpoint, token=hub.token))
    assert loaded == tmp_path / "downloads" / "cartpole-sf2-names"
    assert (loaded / "config.json").read_bytes() == (folder / "config.json").read_bytes()
    assert (loaded / "replay.mp4").read_bytes() == (folder / "replay.mp4").read_bytes()
    with pytest.raises(HubError, match="already exists"):
        load_from_hf(str(tmp_path / "downloads"), REPO, endpoint=hub.endpoint, token=hub.token)
