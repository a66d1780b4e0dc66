"""Start-up shared by both runners: env info, config file, buffers, initial weights."""

from __future__ import annotations

from sample_factory.algo.runners.components import SharedState
from sample_factory.algo.utils.env_info import EnvInfo, obtain_env_info
from sample_factory.algo.utils.multiprocessing_utils import get_mp_ctx, get_mp_lock
from sample_factory.algo.utils.sampler_state import SamplerStateExchange, exact_resume_supported
from sample_factory.algo.utils.shared_buffers import (
    PolicyWeights,
    allocate_trajectories,
    make_free_slot_queue,
    num_trajectory_slots,
)
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

# obtain_env_info lives with EnvInfo in algo/utils/env_info.py; the runners import it from here with the rest of setup
__all__ = ["make_shared_state", "obtain_env_info"]


def make_shared_state(
    cfg: Config, env_info: EnvInfo, serial: bool, weights: list[PolicyWeights] | None = None
) -> SharedState:
    """Trajectory buffers, free-slot queue and per-policy weights (fresh ones unless ``weights`` are given)."""
    num_slots = num_trajectory_slots(cfg, env_info)
    traj = allocate_trajectories(cfg, env_info, num_slots, share=not serial)
    log.info("Allocated %d trajectory slots of %d steps (%.1f MB)", num_slots, cfg.rollout, traj.numel_bytes() / 1e6)
    if weights is None:
        weights = initial_policy_weights(cfg, env_info, serial)
    sampler_states = SamplerStateExchange() if serial and exact_resume_supported(cfg) else None
    free_slots = make_free_slot_queue(serial, num_slots)
    return SharedState(cfg, env_info, traj, free_slots, weights, serial, sampler_states)


def initial_policy_weights(cfg: Config, env_info: EnvInfo, serial: bool) -> list[PolicyWeights]:
    """One freshly initialised model's weights per policy; locks fit the mode (none needed in one process)."""
    model = create_actor_critic(cfg, env_info.obs_space, env_info.action_space)
    return [PolicyWeights(model.state_dict(), weights_lock(serial)) for _ in range(cfg.num_policies)]


def weights_lock(serial: bool):
    """The lock guarding a PolicyWeights: a ``spawn`` lock shared with the children, or a no-op in serial mode."""
    return get_mp_lock(get_mp_ctx(serial))
