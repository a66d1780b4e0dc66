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
differentiated through. Each is a backward linear recurrence in time, solved for all steps at once by
``backward_linear_recurrence`` rather than by a Python loop over the rollout (with a CartPole-sized model the loop
took about 40 % of the learner's batch preparation: 2.18 -> 1.33 ms per batch without it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import Tensor

from sample_factory.envs.env_info import EnvInfo
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import Config


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
    factors = torch.where(valids.bool(), discount * not_dones, not_dones)  # [T, E]
    last = None if x_last is None else x_last.to(x.dtype)
    return backward_linear_recurrence(x.T, factors.T, last).T


def _one_of(name: str, value: float | None, alias: str, alias_value: float | None) -> float:
    """The value given under Sample Factory 2's parameter name or under its spelled-out alias (exactly one)."""
    if (value is None) == (alias_value is None):
        raise TypeError(f"gae_advantages: give exactly one of {name} (positional) and {alias}= (keyword)")
    return float(value if value is not None else alias_value)


@torch.no_grad()
def gae_advantages(
    rewards: Tensor,
    dones: Tensor,
    values: Tensor,
    valids: Tensor,
    γ: float | None = None,  # Sample Factory 2's parameter names: the discount
    λ: float | None = None,  # and the GAE lambda
    *,
    gamma: float | None = None,
    gae_lambda: float | None = None,
) -> Tensor:
    """Generalized Advantage Estimation over env-major trajectories.

    The discount and lambda are the fifth and sixth arguments (Sample Factory 2 names them ``γ`` and ``λ``), or
    the keywords ``gamma=`` and ``gae_lambda=``.

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
    gamma = _one_of("γ", γ, "gamma", gamma)
    gae_lambda = _one_of("λ", λ, "gae_lambda", gae_lambda)
    not_dones = 1.0 - _as_float(dones, rewards)  # [E, T]
    valid = valids.bool()  # [E, T+1]
    step_valid = valid[:, :-1]  # [E, T]
    values = values.to(rewards.dtype)
    next_values = _successor_values(values, valid, not_dones)  # [E, T] V_s as seen from step t
    deltas = torch.where(step_valid, rewards + gamma * not_dones * next_values - values[:, :-1], 0.0)  # [E, T]
    # a valid step discounts its successor's advantage by gamma * lambda, an invalid one hands it through
    factors = torch.where(step_valid, gamma * gae_lambda * not_dones, not_dones)  # [E, T]
    handed = backward_linear_recurrence(deltas, factors)  # [E, T]: A_t on valid steps
    return torch.where(step_valid, handed, 0.0)


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
    not_dones = 1.0 - _as_float(dones, rewards)  # [E, T]
    rhos = torch.clamp(ratios, max=vtrace_rho)  # [E, T]
    cs = torch.clamp(ratios, max=vtrace_c)  # [E, T]
    valid = valids.bool()  # [E, T+1]
    step_valid = valid[:, :-1]  # [E, T]
    values = values.to(rewards.dtype)
    next_values = _successor_values(values, valid, not_dones)  # [E, T] V_s as seen from step t
    discounts = gamma * not_dones  # [E, T] gamma_t
    deltas = torch.where(step_valid, rhos * (rewards + discounts * next_values - values[:, :-1]), 0.0)  # [E, T]
    # vs_t - V_t = delta_t + gamma_t c_t (vs_s - V_s) on valid steps; an invalid step hands the difference through
    factors = torch.where(step_valid, discounts * cs, not_dones)  # [E, T]
    corrections = backward_linear_recurrence(deltas, factors)  # [E, T]: vs_t - V_t on valid steps
    # vs_s - V_s as seen from step t is what step t+1 handed back (zero after the last step: vs_T = V_T)
    next_corrections = torch.cat([corrections[:, 1:], torch.zeros_like(corrections[:, :1])], dim=1)  # [E, T]
    vs = torch.where(step_valid, values[:, :-1] + corrections, values[:, :-1])
    next_vs = next_values + next_corrections  # [E, T]
    pg_advantages = torch.where(step_valid, rhos * (rewards + discounts * next_vs - values[:, :-1]), 0.0)
    return vs, pg_advantages


def _successor_values(values: Tensor, valid: Tensor, not_dones: Tensor) -> Tensor:
    """``V_s`` of the successor s of every step t ([E, T]): the next valid step's value, cut to 0 by a done.

    Walking backwards, a valid step hands back its own value and an invalid one its successor's, times
    ``1 - done`` (a done on an invalid step still ends the episode). The bootstrap column starts the walk when valid.
    """
    bootstrap = torch.where(valid[:, -1], values[:, -1], 0.0)  # [E]
    step_valid = valid[:, :-1]  # [E, T]
    own = torch.where(step_valid, values[:, :-1], 0.0)  # [E, T]
    # handed[:, t] is what step t hands to step t-1
    handed = backward_linear_recurrence(own, torch.where(step_valid, 0.0, not_dones), last=bootstrap)  # [E, T]
    return torch.cat([handed[:, 1:], bootstrap.unsqueeze(1)], dim=1)


# Above this many elements in the [E, T, T+1] coefficient tensor (64 MB of float32) the recurrence is walked step
# by step instead: long rollouts would otherwise trade a little time for a lot of memory.
_MAX_RECURRENCE_ELEMENTS = 16 * 1024 * 1024


@torch.no_grad()
def backward_linear_recurrence(u: Tensor, m: Tensor, last: Tensor | None = None) -> Tensor:
    """Solve ``y_t = u_t + m_t * y_{t+1}`` backwards in time, ``y_T = last`` (zeros when None), for ``[E, T]`` inputs.

    Every discounted sum here (returns, GAE, V-trace corrections) is such a recurrence. A Python loop over T costs
    a dozen tensor operations per step, which dominated the learner's batch preparation for small models; instead
    ``y_t = sum_{k >= t} (prod_{j=t}^{k-1} m_j) u_k`` is evaluated at once from a cumulative product of the factors
    (``[E, T, T+1]``, cheap for rollouts up to a few hundred steps) and one batched matrix-vector product.
    """
    num_envs, num_steps = u.shape
    if last is None:
        last = torch.zeros_like(u[:, 0])
    if num_envs * num_steps * (num_steps + 1) > _MAX_RECURRENCE_ELEMENTS:
        return _backward_linear_recurrence_loop(u, m, last)
    terms = torch.cat([u, last.unsqueeze(1)], dim=1)  # [E, T+1]: u_0 .. u_{T-1}, y_T
    shifted = torch.cat([torch.ones_like(m[:, :1]), m], dim=1)  # [E, T+1]: column k holds m_{k-1}
    steps = torch.arange(num_steps + 1, device=u.device)
    after = steps.unsqueeze(0) > steps[:num_steps].unsqueeze(1)  # [T, T+1]: k > t
    # column k of row t multiplies in m_{k-1} for k > t, so the running product is prod_{j=t}^{k-1} m_j
    products = torch.where(after, shifted.unsqueeze(1), 1.0).cumprod(dim=2)  # [E, T, T+1]
    products = products * (after | (steps.unsqueeze(0) == steps[:num_steps].unsqueeze(1)))  # zero for k < t
    return torch.bmm(products, terms.unsqueeze(2)).squeeze(2)  # [E, T]


def _backward_linear_recurrence_loop(u: Tensor, m: Tensor, last: Tensor) -> Tensor:
    """``backward_linear_recurrence`` one step at a time: O(E*T) memory for very long rollouts."""
    result = torch.empty_like(u)
    y = last
    for t in reversed(range(u.shape[1])):
        y = u[:, t] + m[:, t] * y
        result[:, t] = y
    return result


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


# ---- counts of envs, agents and trajectories a run's flags imply ------------------------------------------------


def total_num_envs(cfg: Config) -> int:
    """Envs of the whole run: ``--num_workers`` x ``--num_envs_per_worker``."""
    return cfg.num_workers * cfg.num_envs_per_worker


def total_num_agents(cfg: Config, env_info: EnvInfo) -> int:
    """Actors of the whole run (one per agent of every env): each has its own trajectory slot."""
    return total_num_envs(cfg) * env_info.num_agents


def num_agents_per_worker(cfg: Config, env_info: EnvInfo) -> int:
    """Actors one rollout worker steps: ``--num_envs_per_worker`` x agents per env."""
    return cfg.num_envs_per_worker * env_info.num_agents


def trajectories_per_minibatch(cfg: Config) -> int:
    """Whole trajectories (of ``--rollout`` steps) in one minibatch of ``--batch_size`` samples."""
    return cfg.batch_size // cfg.rollout


def trajectories_per_training_iteration(cfg: Config) -> int:
    """Trajectories one training iteration consumes: ``--num_batches_per_epoch`` minibatches' worth."""
    return cfg.num_batches_per_epoch * trajectories_per_minibatch(cfg)


def prepare_and_normalize_obs(model: torch.nn.Module, obs: dict[str, Any] | Tensor | np.ndarray) -> dict[str, Tensor]:
    """Observations straight from an env (arrays or tensors, one dict or a bare array) made ready for ``model``:
    each key moved to the device and converted to the dtype the model asks for
    (``device_for_input_tensor`` / ``type_for_input_tensor``), then normalised with ``model.normalize_obs``.

    What a script stepping an env by hand does before ``model.forward`` (evaluation, enjoy-like loops). The
    caller's arrays are not modified.
    """
    if not isinstance(obs, dict):
        obs = {"obs": obs}
    prepared = {}
    for key, value in obs.items():
        tensor = value if isinstance(value, Tensor) else torch.as_tensor(np.asarray(value))
        prepared[key] = tensor.to(model.device_for_input_tensor(key)).to(model.type_for_input_tensor(key))
    return model.normalize_obs(prepared)
