"""Fixtures of the Hub tests: a local stand-in for the Hub, and huggingface_hub pointed at it.

huggingface_hub reads its settings when it is first imported, so they are set here, while pytest collects the
tests and before any test imports it. Xet (the Hub's chunked storage protocol) is switched off through the
library's documented ``HF_HUB_DISABLE_XET``, so large files take the Git LFS route that the stand-in implements.
In-process calls pass the stand-in's ``endpoint`` and ``token`` explicitly; the command-line tools get them as
``HF_ENDPOINT`` and ``HF_TOKEN`` (:func:`hub_cli_env`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from hub_stand_in import HubStandIn  # noqa: E402  (after the path insert above)

os.environ["HF_HUB_DISABLE_XET"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"


@pytest.fixture
def hub() -> Iterator[HubStandIn]:
    pytest.importorskip(
        "huggingface_hub", reason='the huggingface extra is not installed (pip install -e ".[huggingface]")'
    )
    server = HubStandIn()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def hub_cli_env(hub: HubStandIn, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> HubStandIn:
    """Point subprocesses (which inherit os.environ) at the stand-in, with a token and a private HF_HOME."""
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    monkeypatch.setenv("HF_TOKEN", hub.token)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    return hub
