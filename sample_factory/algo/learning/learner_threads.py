"""How many torch CPU threads a learner process trains with.

``--learner_main_loop_num_cores`` (default 1) sets it. When the flag is not given, a learner that trains while
sampling waits may use every core of the process instead: in synchronous mode (``--async_rl=False``) with one policy,
the trajectory slots hold exactly the training batch, so rollout and inference workers sit idle while the learner
trains, and the cores they would use are free. Whether the extra threads pay depends on the model: each operator of
a training step is split between the threads, which only pays when the operator has enough work to split. The rule
looks at the model's compute per sample (``model_compute``):

- a convolution reuses each of its weights at every output position, so a convolutional model does far more work
  per sample than its weights count: every core (Atari's Nature CNN on two cores: 1,839 against 1,237 FPS);
- a dense model (linear and recurrent layers) does about one multiply-add per weight per sample: every core from
  ``HEAVY_MULTIPLY_ADDS`` per sample up, the flag's default below it (CartPole's 64-64 MLP, ~5k multiply-adds per
  sample: 14.5-15.1k FPS on one thread against 10.2-11.4k on two).

Asynchronous runs, several policies (the other policies keep sampling), serial mode (one process for every component)
and GPU learners keep the flag's value.
"""

from __future__ import annotations

import os

from torch import nn

from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.typing import Config, PolicyID

FLAG = "learner_main_loop_num_cores"
# a dense model from this many multiply-adds per sample up trains on every core (sync mode); below it, threads
# spend more time handing work out and joining than they save on such small operators
HEAVY_MULTIPLY_ADDS = 1_000_000
CONVOLUTIONS = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d)


def model_compute(model: nn.Module) -> tuple[bool, int]:
    """Whether ``model`` has convolutions, and its parameter count: the multiply-adds per sample of a dense model."""
    has_conv = any(isinstance(module, CONVOLUTIONS) for module in model.modules())
    return has_conv, sum(p.numel() for p in model.parameters())


def learner_num_threads(
    cfg: Config, policy_id: PolicyID, serial: bool, model: nn.Module | None = None
) -> tuple[int, str]:
    """The thread count and why (for the learner's one log line).

    ``model``: the policy's model once built; without it, a learner whose sampling waits counts on every core.
    """
    threads = max(1, int(cfg.learner_main_loop_num_cores))
    if FLAG in (cfg.cli_args or {}):
        return threads, f"--{FLAG}={threads}"
    if serial or cfg.async_rl or cfg.num_policies > 1 or policy_device(cfg, policy_id).type != "cpu":
        return threads, f"--{FLAG}={threads} (default)"
    cores = available_cores()
    if cores <= threads:
        return threads, f"--{FLAG}={threads} (default; {cores} core(s) available)"
    sync = f"sync mode, sampling waits while the learner trains (--{FLAG} not given)"
    if model is None:
        return cores, f"all {cores} cores: {sync}"
    has_conv, multiply_adds = model_compute(model)
    if has_conv:
        return cores, f"all {cores} cores: {sync}; the model has convolutions"
    if multiply_adds >= HEAVY_MULTIPLY_ADDS:
        return cores, f"all {cores} cores: {sync}; dense model of {multiply_adds:,} multiply-adds per sample"
    return threads, (
        f"--{FLAG}={threads} (default): {sync}, but the dense model's {multiply_adds:,} multiply-adds per sample "
        f"(under {HEAVY_MULTIPLY_ADDS:,}) are too few to split between threads"
    )


def available_cores() -> int:
    """Cores this process may run on (its affinity), or the machine's count where affinity is not available."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
