"""The algorithm version stamp follows Sample Factory 2's numbering."""

from __future__ import annotations

from sample_factory.utils.algo_version import ALGO_VERSION


def test_algo_version_is_sample_factory_2s():
    assert isinstance(ALGO_VERSION, int) and ALGO_VERSION == 83
