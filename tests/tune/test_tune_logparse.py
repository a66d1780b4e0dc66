"""FPS and profile read from a trial's output lines, in the format the runner prints them."""

from __future__ import annotations

import pytest

from sample_factory.tune.logparse import TrialLog, fps_figure, sampling_seconds, stamp_seconds, where_time_went

LINES = """\
[2026-11-23 18:19:58,278][03960] Started 4 processes
[2026-11-23 18:20:01,000][03960] All 5 components ready, collecting experience
[2026-11-23 18:20:03,000][03960] Fps is (10 sec: 0.0, 60 sec: 0.0, 300 sec: 0.0). Total num frames: 0. Throughput: 0: 0.0. Samples: 0.
[2026-11-23 18:20:08,000][03960] Fps is (10 sec: 498.4, 60 sec: 498.4, 300 sec: 498.4). Total num frames: 4000. Throughput: 0: 498.4. Samples: 4096.
[2026-11-23 18:20:13,000][03960] Fps is (10 sec: 810.6, 60 sec: 626.0, 300 sec: 626.0). Total num frames: 9000. Throughput: 0: 810.6. Samples: 8704. Policy #0 lag: (min: 1.0, avg: 1.9, max: 2.0)
[2026-11-23 18:20:18,000][03960] Fps is (10 sec: 1269.0, 60 sec: 851.2, 300 sec: 851.2). Total num frames: 15000. Throughput: 0: 1269.0. Samples: 16384.
[2026-11-23 18:20:21,000][03960] Runner profile tree view:
summaries: 0.1336
[2026-11-23 18:20:21,001][03960] RolloutWorker rollout_w0 profile tree view:
env_step: 4.4910, complete_rollouts: 1.7839
[2026-11-23 18:20:21,002][03960] Learner learner_p0 profile tree view:
publish_weights: 0.0307, save_checkpoint: 0.0872
train: 16.0000
  forward_head: 4.3130, bptt: 18.5368
[2026-11-23 18:20:21,003][03960] InferenceWorker inference_p0_w0 profile tree view:
one_step: 8.0000
  gather: 0.3782, forward: 7.6991
[2026-11-23 18:20:21,004][03960] Collected {0: 15000}, FPS: 750.0
"""  # noqa: E501


def _log(lines: str) -> TrialLog:
    log = TrialLog()
    for line in lines.splitlines(keepends=True):
        log.feed(line)
    return log


def test_steady_fps_counts_frames_between_status_lines_after_the_warmup():
    log = _log(LINES)
    assert log.ready_at == stamp_seconds("2026-11-23 18:20:01,000")
    figure = fps_figure(log, warmup_s=6.0)  # first status line at >= ready + 6 s is 18:20:08
    assert figure.method == "steady"
    assert figure.fps == pytest.approx((15000 - 4000) / 10.0)
    later = fps_figure(log, warmup_s=10.0)
    assert later.fps == pytest.approx((15000 - 9000) / 5.0)


def test_fallbacks_when_there_is_no_steady_window():
    log = _log(LINES)
    assert fps_figure(log, warmup_s=30.0).method == "10s window"
    assert fps_figure(log, warmup_s=30.0).fps == pytest.approx(1269.0)
    summary_only = _log("[2026-11-23 18:20:21,004][03960] Collected {0: 15000}, FPS: 750.0\n")
    assert fps_figure(summary_only, warmup_s=1.0).method == "overall"
    assert fps_figure(TrialLog(), warmup_s=1.0) is None


def test_profile_keeps_top_level_entries_only():
    log = _log(LINES)
    assert log.profile["learner"]["train"] == 16.0
    assert "bptt" not in log.profile["learner"]  # nested: part of train, not extra time
    assert "runner" not in log.profile
    assert sampling_seconds(log) == pytest.approx(20.004)  # from "components ready" to the last profile tree
    assert (
        where_time_went(log, sampling_seconds(log)) == "learner.train 80%, inference.one_step 40%, rollout.env_step 22%"
    )
    assert where_time_went(TrialLog(), 1.0) == "-"
