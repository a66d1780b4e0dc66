"""``retry``, ``set_attr_if_exists`` and ``figure_to_numpy`` from ``sample_factory.utils.utils``."""

from __future__ import annotations

import numpy as np
import pytest

from sample_factory.utils.utils import figure_to_numpy, retry, set_attr_if_exists


def test_retry_until_success_then_reraises_the_last_failure() -> None:
    calls = []

    @retry(3, OSError)
    def flaky(fail_times: int) -> str:
        calls.append(1)
        if len(calls) <= fail_times:
            raise OSError(f"failure {len(calls)}")
        return "ok"

    assert flaky(2) == "ok" and len(calls) == 3
    calls.clear()
    with pytest.raises(OSError, match="failure 3"):
        flaky(5)
    assert len(calls) == 3


def test_retry_lets_other_exceptions_through() -> None:
    calls = []

    @retry(times=5, exceptions=(OSError, TimeoutError))
    def broken() -> None:
        calls.append(1)
        raise KeyError("not retried")

    with pytest.raises(KeyError):
        broken()
    assert len(calls) == 1 and broken.__name__ == "broken"
    with pytest.raises(ValueError, match="at least 1"):
        retry(0, OSError)


def test_set_attr_if_exists() -> None:
    class Wrapper:
        frameskip = 4

    w = Wrapper()
    assert set_attr_if_exists(w, "frameskip", 2) is True and w.frameskip == 2
    assert set_attr_if_exists(w, "unknown", 1) is False and not hasattr(w, "unknown")


def test_figure_to_numpy_gives_the_rendered_rgb_pixels() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure = plt.figure(figsize=(2, 1), dpi=50)
    figure.patch.set_facecolor((1.0, 0.0, 0.0))  # a red background fills every pixel not covered by axes
    try:
        pixels = figure_to_numpy(figure)
    finally:
        plt.close(figure)
    assert pixels.shape == (50, 100, 3) and pixels.dtype == np.uint8
    assert pixels[0, 0].tolist() == [255, 0, 0]
