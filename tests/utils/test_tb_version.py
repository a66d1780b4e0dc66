"""``tb_version``: TensorBoard's installed version from the package metadata, None when it is not installed."""

from __future__ import annotations

import importlib.metadata

import pytest

from sample_factory.utils import tb
from sample_factory.utils.tb import tb_version


def test_tb_version_matches_the_installed_package() -> None:
    try:
        expected = importlib.metadata.version("tensorboard")
    except importlib.metadata.PackageNotFoundError:
        expected = None
    assert tb_version() == expected


def test_tb_version_without_tensorboard(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(tb.importlib.metadata, "version", missing)
    assert tb_version() is None
