"""Steps of ``Learner.prepare_batch``: from collected trajectories to a flat batch of training samples.

All functions here are out-of-place: the trajectories handed to the learner may be views of shared buffers (and on
a CPU learner ``.to(device)`` returns the very same tensors), so nothing may be written into them.

The running normalisers are updated only here, once per batch, never during the SGD epochs: updating them from the
same data once per epoch would count every sample ``num_epochs`` times and shift the inputs between epochs.

The learner prepares batches on its main thread while SGD runs on another, and whether a normaliser updates its
statistics is a module flag (``train()``/``eval()``), not an argument. Every use of the normalisers therefore goes
through ``normalizers_mode``, which sets the flag explicitly and holds a process-wide lock until the block ends, so
one thread can never flip the mode under the other.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from sample_factory.model.actor_critic import ActorCritic, ObsDict

_NORMALIZERS_LOCK = threading.RLock()


def discard_stale(
    valids: Tensor, policy_version: Tensor, current_version: int, max_policy_lag: int
) -> tuple[Tensor, Tensor, Tensor]:
    """Mask steps collected by a policy more than ``max_policy_lag`` versions old (``--max_policy_lag``).

    Args:
        valids: [N, T] bool, step belongs to an active agent.
        policy_version: [N, T] version of the policy that chose each action.

    Returns:
        ``(valids, discarded, policy_lag)``: the new validity, the valid steps dropped as stale, and the lag of
        every step, all [N, T].
    """
    policy_lag = current_version - policy_version  # [N, T]
    discarded = valids & (policy_lag > max_policy_lag)
    return valids & ~discarded, discarded, policy_lag


def shape_rewards(rewards: Tensor, reward_scale: float, reward_clip: float) -> Tensor:
    """``clamp(rewards * --reward_scale, -r, r)`` with ``r = --reward_clip``: keeps value targets in a sane range."""
    return (rewards * reward_scale).clamp(-reward_clip, reward_clip)


def bootstrap_time_outs(rewards: Tensor, time_outs: Tensor, values: Tensor, gamma: float) -> Tensor:
    """``--value_bootstrap``: a truncated episode did not really end, so add ``gamma * V`` to its last reward.

    The true final observation of a truncated episode is gone (the env auto-resets), so ``V`` is the value of the
    state the last action was taken in, ``V(s_t)``: consecutive states of a moving body are worth about the same.
    The value stored for the next step is no substitute: it belongs to the next episode's start state, which can be
    worth far less (a standing cheetah against a running one), and because parallel envs with a fixed episode length
    truncate on the same step, that error would land on every trajectory of the same batch at once. This is also
    what Sample Factory 2 bootstraps with. Values must be in reward units (de-normalised).

    Args:
        rewards, time_outs, values: [N, T]; ``time_outs`` is 1 where the step ended its episode by truncation.
    """
    return rewards + gamma * values * time_outs


def flatten_steps(x: Tensor, num_steps: int) -> Tensor:
    """The first ``num_steps`` steps of ``x`` ([N, >=T, ...]) as a new tensor ``[N*T, ...]``, trajectory-major."""
    flat = x[:, :num_steps].flatten(0, 1)
    if flat.untyped_storage().data_ptr() == x.untyped_storage().data_ptr():
        flat = flat.clone()  # a view when the slice is contiguous: never hand out the caller's memory
    return flat


def normalizers_lock() -> threading.RLock:
    """The lock that every use of the running normalisers holds (a distributed run also merges them under it)."""
    return _NORMALIZERS_LOCK


@contextmanager
def normalizers_mode(actor_critic: ActorCritic, training: bool) -> Iterator[None]:
    """Put the running normalisers in train (update statistics) or eval (only apply) mode for one block.

    Holds the normalisers' lock for the whole block (see the module docstring); the previous modes are restored.
    """
    modules: list[nn.Module] = [
        m for m in (actor_critic.obs_normalizer, actor_critic.returns_normalizer) if m is not None
    ]
    with _NORMALIZERS_LOCK:
        previous = [m.training for m in modules]
        for m in modules:
            m.train(training)
        try:
            yield
        finally:
            for m, was_training in zip(modules, previous, strict=True):
                m.train(was_training)


@torch.no_grad()
def apply_returns_normalizer(actor_critic: ActorCritic, x: Tensor, denormalize: bool, update: bool = False) -> Tensor:
    """Normalise (or de-normalise) returns or values ``x``; a new tensor, ``x`` is untouched.

    The normaliser works in place on float tensors, hence the clone. Statistics are updated from ``x`` only when
    ``update`` (never when de-normalising). Identity without ``--normalize_returns``.
    """
    if actor_critic.returns_normalizer is None:
        return x
    with normalizers_mode(actor_critic, training=update):
        return actor_critic.returns_normalizer(x.clone(), denormalize=denormalize)


@torch.no_grad()
def normalize_observations(actor_critic: ActorCritic, obs: ObsDict, valids: Tensor) -> ObsDict:
    """Update the observation statistics from the valid samples, then normalise every sample with them.

    Invalid samples (inactive agents, stale data) are left out of the statistics so that, like everywhere else in
    the learner, changing their data cannot change how valid samples are trained on.

    Args:
        obs: key -> [B, *obs_shape] raw observations.
        valids: [B] bool.
    """
    if actor_critic.obs_normalizer is None:
        return actor_critic.normalize_obs(obs)
    if bool(valids.all()):
        # in train mode the normaliser updates first, then applies the new statistics: one pass does both steps
        with normalizers_mode(actor_critic, training=True):
            return actor_critic.normalize_obs(obs)
    with normalizers_mode(actor_critic, training=True):
        actor_critic.normalize_obs({key: x[valids] for key, x in obs.items()})
    with normalizers_mode(actor_critic, training=False):
        return actor_critic.normalize_obs(obs)


@torch.no_grad()
def predict_values(actor_critic: ActorCritic, obs: ObsDict, rnn_states: Tensor) -> Tensor:
    """Values [B] (in the returns normaliser's space) of single steps from raw observations, statistics untouched.

    Used for the bootstrap state after the last step of each trajectory.

    Args:
        obs: key -> [B, *obs_shape] raw observations.
        rnn_states: [B, rnn_size] states before the step.
    """
    with normalizers_mode(actor_critic, training=False):
        normalized_obs = actor_critic.normalize_obs(obs)
    head_output = actor_critic.forward_head(normalized_obs)
    core_output, _ = actor_critic.forward_core(head_output, rnn_states)
    return actor_critic.forward_tail(core_output, values_only=True, sample_actions=False)["values"]
