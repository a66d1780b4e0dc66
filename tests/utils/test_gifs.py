"""``encode_gif``: frames to GIF bytes that decode back to the same frames, at the requested rate."""

from __future__ import annotations

import io

import numpy as np
import pytest

from sample_factory.utils.gifs import encode_gif

Image = pytest.importorskip("PIL.Image")


def _frames() -> list[np.ndarray]:
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255)]
    return [np.tile(np.array(c, dtype=np.uint8), (8, 12, 1)) for c in colours]


def test_round_trip_of_frames_and_timing() -> None:
    data = encode_gif(_frames(), fps=20)
    assert data[:6] == b"GIF89a"
    gif = Image.open(io.BytesIO(data))
    assert gif.n_frames == 3 and gif.size == (12, 8) and gif.info["loop"] == 0
    decoded = []
    for i in range(3):
        gif.seek(i)
        assert gif.info["duration"] == 50
        decoded.append(np.asarray(gif.convert("RGB"))[0, 0].tolist())
    assert decoded == [[255, 0, 0], [0, 255, 0], [0, 0, 255]]


def test_grey_and_float_frames() -> None:
    frames = [np.zeros((4, 4)), np.ones((4, 4))]  # floats in [0, 1]
    gif = Image.open(io.BytesIO(encode_gif(frames, fps=10)))
    gif.seek(1)
    assert np.asarray(gif.convert("L")).min() == 255


@pytest.mark.parametrize(
    ("images", "fps", "match"),
    [
        ([], 10, "at least one"),
        ([np.zeros((4, 4, 3))], 0, "positive"),
        ([np.zeros((4, 4, 4))], 10, "expected"),
        ([np.zeros((4, 4, 3)), np.zeros((5, 4, 3))], 10, "different sizes"),
    ],
)
def test_bad_input(images, fps, match) -> None:
    with pytest.raises(ValueError, match=match):
        encode_gif(images, fps)
