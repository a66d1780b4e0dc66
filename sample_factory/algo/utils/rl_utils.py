"""Return and advantage estimators: discounted sums, GAE (Schulman et al. 2016) and V-trace (Espeholt et al. 2018).

Two layouts are used, matching how the callers hold their data: ``calculate_discounted_sum_torch`` works on
time-major tensors ``[T, E]``, while ``gae_advantages`` and ``vtrace`` take env-major trajectories ``[E, T]`` as
they come out of the trajectory buffers, with values and valids one column longer (``[E, T+1]``): the last column
is the state after the final step, used to bootstrap.

``valids`` marks steps that belong to the trained policy and agent (an inactive agent, or a step collected by a
different policy, is invalid). The estimators treat an invalid step as transparent: its reward and value are
ignored and it adds no discounting, so a valid step sees the next *valid* step as its successor. A done flag is
honoured on every step, valid or not, because the episode ends either way. Results on invalid steps are
placeholders (documented per function) that the learner masks out.

All estimators are computed without autograd: they are regression targets and advantage weights, never
differentiated through.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from sample_factory.algo.utils.tensor_dict import TensorDict


def _as_float(x: Tensor, like: Tensor) -> Tensor:
    """Bool or integer flags as floats of ``like``'s dtype, so they can be mixed into arithmetic."""
    return x.to(dtype=like.dtype)


@torch.no_grad()
def calculate_discounted_sum_torch(
    x: Tensor, dones: Tensor, valids: Tensor, discount: float, x_last: Tensor | None = None
) -> Tensor:
    """Discounted sum of ``x`` along time, walking backwards from the last step.

    ``cum = x[t] + d_t * cum * (1 - dones[t])`` with ``d_t = discount`` on valid steps and ``1`` on invalid ones,
    so invalid steps pass the running sum through undiscounted. ``x_last`` ([E]) initialises ``cum`` (the value
    after the last step, e.g. a bootstrap value); zeros when None.

    Args:
        x: [T, E] quantities to sum (rewards, TD errors).
        dones: [T, E] episode ended after step t; cuts the sum.
        valids: [T, E] step t is valid.
        discount: per-step discount factor (gamma, or gamma * gae_lambda for GAE).
        x_last: [E] initial value of the running sum, or None.

    Returns:
        [T, E] the discounted sums, same dtype as ``x``.
    """
    not_dones = 1.0 - _as_float(dones, x)  # [T, E]
    step_discounts = torch.where(valids.bool(), x.new_tensor(discount), x.new_tensor(1.0))  # [T, E]
    cumulative = torch.zeros_like(x[0]) if x_last is None else x_last.to(x.dtype)  # [E]
    discounted = torch.empty_like(x)  # [T, E]
    for t in reversed(range(x.shape[0])):
        cumulative = x[t] + step_discounts[t] * cumulative * not_dones[t]
        discounted[t] = cumulative
    return discounted


@torch.no_grad()
def gae_advantages(
    rewards: Tensor, dones: Tensor, values: Tensor, valids: Tensor, gamma: float, gae_lambda: float
) -> Tensor:
    """Generalized Advantage Estimation over env-major trajectories.

    For a valid step t with successor s (the next valid step, or the bootstrap column T):

    - ``delta_t = r_t + gamma * (1 - done_t) * V_s - V_t``
    - ``A_t = delta_t + gamma * gae_lambda * (1 - done_t) * A_s`` (``A_T = 0``)

    Invalid steps in between are skipped: their rewards and values are ignored and they add no discounting, but a
    done on an invalid step still ends the episode (the preceding valid step then bootstraps from zero). The
    bootstrap value ``values[:, T]`` is used only if ``valids[:, T]``, otherwise the segment is treated as ending.

    Args:
        rewards: [E, T] rewards.
        dones: [E, T] episode ended after step t (terminated or truncated).
        values: [E, T+1] value estimates; the last column is the bootstrap value.
        valids: [E, T+1] validity of each step and of the bootstrap state.
        gamma: discount factor.
        gae_lambda: GAE lambda; 1 gives Monte-Carlo advantages, 0 one-step TD errors.

    Returns:
        [E, T] advantages; zero on invalid steps. Value targets are ``advantages + values[:, :-1]``.
    """
    num_steps = rewards.shape[1]
    not_dones = 1.0 - _as_float(dones, rewards)  # [E, T]
    valid_mask = valids.bool()  # [E, T+1]
    next_value = torch.where(valid_mask[:, -1], values[:, -1], 0.0).to(rewards.dtype)  # [E]
    next_advantage = torch.zeros_like(next_value)  # [E]
    advantages = torch.empty_like(rewards)  # [E, T]
    for t in reversed(range(num_steps)):
        valid_t = valid_mask[:, t]
        delta = rewards[:, t] + gamma * not_dones[:, t] * next_value - values[:, t]
        advantage = delta + gamma * gae_lambda * not_dones[:, t] * next_advantage
        advantages[:, t] = torch.where(valid_t, advantage, 0.0)
        # an invalid step hands its successor's quantities through, unless the episode ended on it
        next_advantage = torch.where(valid_t, advantage, next_advantage * not_dones[:, t])
        next_value = torch.where(valid_t, values[:, t], next_value * not_dones[:, t])
    return advantages


@torch.no_grad()
def vtrace(
    ratios: Tensor,
    rewards: Tensor,
    dones: Tensor,
    values: Tensor,
    valids: Tensor,
    gamma: float,
    vtrace_rho: float,
    vtrace_c: float,
) -> tuple[Tensor, Tensor]:
    """V-trace value targets and policy-gradient advantages (IMPALA, Espeholt et al. 2018, section 4).

    With truncated importance weights ``rho_t = min(vtrace_rho, ratios_t)`` and ``c_t = min(vtrace_c, ratios_t)``,
    where ``ratios_t = pi(a_t|x_t) / mu(a_t|x_t) = exp(log_pi - log_mu)``, and successor s of step t (the next
    valid step, or the bootstrap column T), with ``gamma_t = gamma * (1 - done_t)``:

    - ``delta_t = rho_t * (r_t + gamma_t * V_s - V_t)``
    - ``vs_t = V_t + delta_t + gamma_t * c_t * (vs_s - V_s)`` (the backward form of eq. 1; ``vs_T = V_T``)
    - ``pg_advantage_t = rho_t * (r_t + gamma_t * vs_s - V_t)``

    Dones cut the recursion at episode ends; invalid steps are skipped exactly as in ``gae_advantages`` (a done
    on an invalid step still ends the episode); an invalid bootstrap column bootstraps from zero. With on-policy
    data (ratios 1) and ``vtrace_rho, vtrace_c >= 1`` the targets are the n-step returns bootstrapped from the
    last value and the advantages equal GAE with ``gae_lambda = 1``.

    Args:
        ratios: [E, T] importance ratios pi/mu of the taken actions (pass detached ratios).
        rewards: [E, T] rewards.
        dones: [E, T] episode ended after step t.
        values: [E, T+1] value estimates under the current policy; the last column is the bootstrap value.
        valids: [E, T+1] validity of each step and of the bootstrap state.
        gamma: discount factor.
        vtrace_rho: rho_bar, truncation of the importance weight on the TD error (sets the fixed point).
        vtrace_c: c_bar, truncation of the trace-cutting weights (sets the contraction speed).

    Returns:
        ``(vs, pg_advantages)``, both [E, T]. On invalid steps ``vs`` equals ``values`` and the advantage is zero.
    """
    num_steps = rewards.shape[1]
    not_dones = 1.0 - _as_float(dones, rewards)  # [E, T]
    rhos = torch.clamp(ratios, max=vtrace_rho)  # [E, T]
    cs = torch.clamp(ratios, max=vtrace_c)  # [E, T]
    valid_mask = valids.bool()  # [E, T+1]
    next_value = torch.where(valid_mask[:, -1], values[:, -1], 0.0).to(rewards.dtype)  # [E]
    next_vs = next_value.clone()  # [E]
    vs = torch.empty_like(rewards)  # [E, T]
    pg_advantages = torch.empty_like(rewards)  # [E, T]
    for t in reversed(range(num_steps)):
        valid_t = valid_mask[:, t]
        discount = gamma * not_dones[:, t]
        value_t = values[:, t]
        delta = rhos[:, t] * (rewards[:, t] + discount * next_value - value_t)
        vs_t = value_t + delta + discount * cs[:, t] * (next_vs - next_value)
        pg_advantage = rhos[:, t] * (rewards[:, t] + discount * next_vs - value_t)
        vs[:, t] = torch.where(valid_t, vs_t, value_t)
        pg_advantages[:, t] = torch.where(valid_t, pg_advantage, 0.0)
        next_vs = torch.where(valid_t, vs_t, next_vs * not_dones[:, t])
        next_value = torch.where(valid_t, value_t, next_value * not_dones[:, t])
    return vs, pg_advantages


Flags = bool | np.ndarray | Tensor | list[bool]


def make_dones(terminated: Flags, truncated: Flags) -> Flags:
    """``terminated or truncated`` elementwise: the rollout treats both as the end of an episode.

    The distinction matters only to whoever bootstraps from truncated episodes; here a step either ends the
    episode or not. Returns the same kind of container as the inputs (bool, array, tensor or list).
    """
    if isinstance(terminated, Tensor) or isinstance(truncated, Tensor):
        return torch.logical_or(torch.as_tensor(terminated), torch.as_tensor(truncated))
    if isinstance(terminated, np.ndarray) or isinstance(truncated, np.ndarray):
        return np.logical_or(terminated, truncated)
    if isinstance(terminated, (list, tuple)):
        return [bool(term or trunc) for term, trunc in zip(terminated, truncated, strict=True)]
    return bool(terminated or truncated)


def samples_per_trajectory(trajectory: TensorDict) -> int:
    """How many env steps (samples, one per agent step) a trajectory TensorDict holds.

    Counted from ``rewards``, the one per-step field every trajectory has: ``[N, T]`` for N trajectories of T steps
    (``obs`` and ``rnn_states`` carry one extra column, so they would overcount), ``[T]`` for a single one. Steps of
    inactive agents (``valids`` False) are counted too: they occupy the trajectory like any other step. Frameskip
    is not applied: one sample is one decision of the policy.
    """
    if not isinstance(trajectory, dict) or "rewards" not in trajectory:
        found = sorted(trajectory) if isinstance(trajectory, dict) else type(trajectory).__name__
        raise ValueError(
            f"samples_per_trajectory expects a trajectory TensorDict with a 'rewards' tensor [N, T], got {found}: "
            "pass what the sampler returned (e.g. SyncSamplingAPI.get_trajectories_sync())"
        )
    return int(trajectory["rewards"].numel())
