"""How many torch CPU threads a learner process trains with.

``--learner_main_loop_num_cores`` (default 1) sets it. When the flag is not given, a learner that trains while
sampling waits uses every core of the process instead: in synchronous mode (``--async_rl=False``) with one policy,
the trajectory slots hold exactly the training batch, so rollout and inference workers sit idle while the learner
trains, and the cores they would use are free. On two cores this made an Atari learner's training step 1.75x faster
(``docs/learner.md``). Asynchronous runs, several policies (the other policies keep sampling), serial mode (one
process for every component) and GPU learners keep the flag's value.
"""

from __future__ import annotations

import os

from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.typing import Config, PolicyID

FLAG = "learner_main_loop_num_cores"


def learner_num_threads(cfg: Config, policy_id: PolicyID, serial: bool) -> tuple[int, str]:
    """The thread count and why (for the learner's one log line)."""
    threads = max(1, int(cfg.learner_main_loop_num_cores))
    if FLAG in (cfg.cli_args or {}):
        return threads, f"--{FLAG}={threads}"
    if serial or cfg.async_rl or cfg.num_policies > 1 or policy_device(cfg, policy_id).type != "cpu":
        return threads, f"--{FLAG}={threads} (default)"
    cores = available_cores()
    if cores <= threads:
        return threads, f"--{FLAG}={threads} (default; {cores} core(s) available)"
    return cores, f"all {cores} cores: sync mode, sampling waits while the learner trains (--{FLAG} not given)"


def available_cores() -> int:
    """Cores this process may run on (its affinity), or the machine's count where affinity is not available."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
