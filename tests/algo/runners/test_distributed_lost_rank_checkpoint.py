"""A distributed run stopped by a dead rank keeps its progress: rank 0 saves the state of the last training step
that completed on every rank, although its live model may hold part of the step that failed (CartPole, two CPU
ranks in serial mode, no periodic checkpoint: before the fix nothing was saved)."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from sf_run import free_ports, shm_entries
from test_distributed_runs import START_TIMEOUT_S, STOP_LIMIT_S, TRAIN_GYM, RankProcess, _train_args

from sample_factory.algo.utils.checkpoints import checkpoint_name, load_checkpoint_file

_FRAMES_RE = re.compile(r"Total num frames: (\d+)")


def _rank_env(rank: int, port: int) -> dict[str, str]:
    return {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port)}  # fmt: skip


def test_a_lost_rank_leaves_the_last_step_every_rank_completed_on_disk(tmp_path: Path) -> None:
    before = shm_entries()
    port = free_ports(1)[0]
    args = _train_args(tmp_path, "--serial_mode=True", "--train_for_env_steps=100000000", "--save_every_sec=100000")
    ranks = [RankProcess([sys.executable, "-m", TRAIN_GYM, *args], _rank_env(r, port)) for r in (0, 1)]
    try:
        for rank in ranks:
            rank.wait_for(r"Fps is", START_TIMEOUT_S)  # both train
        deadline = time.monotonic() + START_TIMEOUT_S
        while len(_FRAMES_RE.findall(ranks[0].output)) < 3 or int(_FRAMES_RE.findall(ranks[0].output)[-1]) == 0:
            assert time.monotonic() < deadline and ranks[0].proc.poll() is None, ranks[0].output[-3000:]
            time.sleep(0.2)
        # rank 0 reports the run's env steps after training steps that completed on both ranks
        reported = int(_FRAMES_RE.findall(ranks[0].output)[-1])
        os.killpg(ranks[1].proc.pid, signal.SIGKILL)
        code = ranks[0].wait(timeout=STOP_LIMIT_S + 30)
    finally:
        for rank in ranks:
            rank.reap()
    output = ranks[0].output
    assert code == 1, output[-4000:]  # FAILURE, naming the rank
    assert re.search(r"Rank(\(s\))? 1 (sent no heartbeat|stopped|is unreachable)", output), output[-4000:]
    checkpoints = sorted((tmp_path / "ddp" / "checkpoint_p0").glob("checkpoint_*.pth"))
    assert len(checkpoints) == 1, output[-4000:]
    state = load_checkpoint_file(str(checkpoints[0]))
    assert state["world_size"] == 2 and "sampler" not in state
    assert state["env_steps"] >= reported > 0, (state["env_steps"], reported)
    # the published weights of a completed step: every SGD step of every completed training step, no more
    cfg = json.loads((tmp_path / "ddp" / "config.json").read_text())
    sgd_steps_per_training_step = cfg["num_epochs"] * cfg["num_batches_per_epoch"]
    assert state["train_step"] >= 1 and state["policy_version"] == sgd_steps_per_training_step * state["train_step"]
    assert checkpoints[0].name == checkpoint_name(state["train_step"], state["env_steps"])
    assert f"train step {state['train_step']} (env steps {state['env_steps']})" in output, output[-4000:]
    assert "not saving a final checkpoint" not in output
    assert shm_entries() - before == set()
