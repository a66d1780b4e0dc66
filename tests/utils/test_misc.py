"""Constants of Sample Factory 2's public ``algo.utils.misc`` module."""

from __future__ import annotations

from sample_factory.utils.misc import EPISODIC


def test_episodic_stats_key_is_sample_factory_2s():
    # user handlers read msg["episodic"] literally in Sample Factory 2 scripts; the constant must keep that value
    assert EPISODIC == "episodic"
    msg = {EPISODIC: {"reward": 1.0}, "policy_id": 0}
    assert msg["episodic"]["reward"] == 1.0
