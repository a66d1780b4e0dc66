"""Which processes of a run get the CPU first where they share few cores: inference request holding and the learner.

An inference worker may hold pending requests to serve several rollout workers in one pass
(``algo.sampling.request_batching``); where it does and the learner computes on the CPU, the learner's process yields
the CPU to sampling by running at ``LEARNER_NICENESS``. Both choices are made here, from the config and the policy's
observation space, for the inference worker (whether to hold) and for the learner's process (its niceness, set before
its components start). Measurements: docs/architecture.md, "Batching inference requests".
"""

from __future__ import annotations

import gymnasium as gym

from sample_factory.utils.typing import Config

# the learner process's niceness where it yields the CPU to the sampling processes (learner_yields_cpu); niceness 5
# gives a process about a third of the CPU weight of one at 0 when both are ready to run
LEARNER_NICENESS = 5


def holds_requests(cfg: Config, obs_space: gym.Space) -> bool:
    """Whether the inference workers of a policy with observations ``obs_space`` hold requests.

    ``--inference_batch_wait`` True or False decides; unset (None), holding is on for image observations on a CPU run
    (``--device=cpu``), where a pass costs nearly as much for few observations as for many (conv and RNN weights
    streamed from memory), and off elsewhere: a small MLP's pass costs little whatever its size, and there the
    learner, not the inference worker, is what the run waits on (CartPole, ``compare_sf2``'s cartpole_matched flags:
    8,007 FPS on average with holding and the yielding learner against 8,986 without, three rounds). Never in serial
    mode, where every rollout worker has stepped by the time an inference worker's hook runs, nor without
    ``--async_rl``, where nothing trains during collection to use the CPU time saved.
    """
    if not cfg.async_rl or cfg.serial_mode:
        return False
    if cfg.inference_batch_wait is not None:
        return bool(cfg.inference_batch_wait)
    return cfg.device == "cpu" and has_images(obs_space)


def has_images(obs_space: gym.Space) -> bool:
    """Whether ``obs_space`` is, or holds, a ``Box`` of three dimensions (an image, channels first or last)."""
    if isinstance(obs_space, gym.spaces.Dict):
        return any(has_images(space) for space in obs_space.spaces.values())
    return isinstance(obs_space, gym.spaces.Box) and len(obs_space.shape) == 3


def learner_yields_cpu(cfg: Config, obs_space: gym.Space) -> bool:
    """Whether a policy's learner process runs at ``LEARNER_NICENESS``: where its inference workers hold requests and
    it computes on the CPU (on a GPU, its process mostly waits for the device and competes for little)."""
    return holds_requests(cfg, obs_space) and cfg.device == "cpu"
