"""Discounted sums, GAE and V-trace against plain-Python references written from their definitions."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from sample_factory.algo.utils import rl_utils
from sample_factory.algo.utils.rl_utils import (
    backward_linear_recurrence,
    calculate_discounted_sum_torch,
    gae_advantages,
    make_dones,
    vtrace,
)

GAMMA = 0.9
NUM_ENVS, NUM_STEPS = 5, 16


def _random_trajectories(seed: int, p_done: float = 0.2, p_valid: float = 0.75) -> dict[str, torch.Tensor]:
    """Env-major float64 trajectories with episode ends and invalid steps scattered inside the segment."""
    gen = torch.Generator().manual_seed(seed)
    return dict(
        rewards=torch.randn(NUM_ENVS, NUM_STEPS, generator=gen, dtype=torch.float64),
        dones=(torch.rand(NUM_ENVS, NUM_STEPS, generator=gen) < p_done).double(),
        values=torch.randn(NUM_ENVS, NUM_STEPS + 1, generator=gen, dtype=torch.float64),
        valids=torch.rand(NUM_ENVS, NUM_STEPS + 1, generator=gen) < p_valid,
        ratios=torch.rand(NUM_ENVS, NUM_STEPS, generator=gen, dtype=torch.float64) * 2.0,
    )


def _successor(dones: list[float], valids: list[bool], t: int) -> int | None:
    """Index of the step that follows valid step t (T for the bootstrap state), or None if the episode ends first."""
    num_steps = len(dones)
    if dones[t]:
        return None
    for u in range(t + 1, num_steps):
        if valids[u]:
            return u
        if dones[u]:
            return None
    return num_steps


def _reference_gae(traj: dict, gamma: float, gae_lambda: float) -> np.ndarray:
    advantages = np.zeros((NUM_ENVS, NUM_STEPS))
    for e in range(NUM_ENVS):
        r, d, v, valid = (traj[k][e].tolist() for k in ("rewards", "dones", "values", "valids"))
        for t in reversed(range(NUM_STEPS)):
            if not valid[t]:
                continue
            s = _successor(d, valid, t)
            if s is None:
                next_value, next_advantage = 0.0, 0.0
            elif s == NUM_STEPS:
                next_value, next_advantage = (v[s] if valid[s] else 0.0), 0.0
            else:
                next_value, next_advantage = v[s], advantages[e, s]
            delta = r[t] + gamma * next_value - v[t]
            advantages[e, t] = delta + gamma * gae_lambda * next_advantage
    return advantages


def _reference_vtrace(traj: dict, gamma: float, rho_bar: float, c_bar: float) -> tuple[np.ndarray, np.ndarray]:
    vs = traj["values"][:, :-1].numpy().copy()
    pg_advantages = np.zeros((NUM_ENVS, NUM_STEPS))
    for e in range(NUM_ENVS):
        r, d, v, valid, ratio = (traj[k][e].tolist() for k in ("rewards", "dones", "values", "valids", "ratios"))
        for t in reversed(range(NUM_STEPS)):
            if not valid[t]:
                continue
            s = _successor(d, valid, t)
            if s is None:
                next_value = next_vs = 0.0
            elif s == NUM_STEPS:
                next_value = next_vs = v[s] if valid[s] else 0.0
            else:
                next_value, next_vs = v[s], vs[e, s]
            rho, c = min(rho_bar, ratio[t]), min(c_bar, ratio[t])
            vs[e, t] = v[t] + rho * (r[t] + gamma * next_value - v[t]) + gamma * c * (next_vs - next_value)
            pg_advantages[e, t] = rho * (r[t] + gamma * next_vs - v[t])
    return vs, pg_advantages


def test_discounted_sum_matches_loop():
    traj = _random_trajectories(seed=0)
    x, dones, valids = traj["rewards"].T, traj["dones"].T, traj["valids"][:, :-1].T  # [T, E]
    x_last = traj["values"][:, -1]  # [E]
    expected = np.zeros((NUM_STEPS, NUM_ENVS))
    for e in range(NUM_ENVS):
        cumulative = x_last[e].item()
        for t in reversed(range(NUM_STEPS)):
            discount = GAMMA if valids[t, e] else 1.0
            cumulative = x[t, e].item() + discount * cumulative * (1.0 - dones[t, e].item())
            expected[t, e] = cumulative
    result = calculate_discounted_sum_torch(x, dones, valids, GAMMA, x_last)
    assert result.shape == (NUM_STEPS, NUM_ENVS)
    np.testing.assert_allclose(result.numpy(), expected, rtol=1e-12)


def test_discounted_sum_without_x_last_starts_from_zero():
    x = torch.ones(3, 1)
    result = calculate_discounted_sum_torch(x, torch.zeros(3, 1), torch.ones(3, 1), 0.5)
    np.testing.assert_allclose(result[:, 0].numpy(), [1.75, 1.5, 1.0])


@pytest.mark.parametrize("gae_lambda", [0.0, 0.95, 1.0])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_gae_matches_reference(seed: int, gae_lambda: float):
    traj = _random_trajectories(seed)
    result = gae_advantages(traj["rewards"], traj["dones"], traj["values"], traj["valids"], GAMMA, gae_lambda)
    assert result.shape == (NUM_ENVS, NUM_STEPS)
    np.testing.assert_allclose(result.numpy(), _reference_gae(traj, GAMMA, gae_lambda), rtol=1e-10, atol=1e-12)
    assert torch.all(result[~traj["valids"][:, :-1]] == 0)


def test_gae_lambda_zero_is_td_error_when_all_valid():
    traj = _random_trajectories(seed=4, p_valid=1.1)
    rewards, dones, values = traj["rewards"], traj["dones"], traj["values"]
    result = gae_advantages(rewards, dones, values, traj["valids"], GAMMA, 0.0)
    td_errors = rewards + GAMMA * (1 - dones) * values[:, 1:] - values[:, :-1]
    torch.testing.assert_close(result, td_errors)


@pytest.mark.parametrize(("rho_bar", "c_bar"), [(1.0, 1.0), (0.8, 0.5), (2.0, 1.5)])
@pytest.mark.parametrize("seed", [5, 6])
def test_vtrace_matches_reference(seed: int, rho_bar: float, c_bar: float):
    traj = _random_trajectories(seed)
    vs, pg_adv = vtrace(
        traj["ratios"], traj["rewards"], traj["dones"], traj["values"], traj["valids"], GAMMA, rho_bar, c_bar
    )
    expected_vs, expected_adv = _reference_vtrace(traj, GAMMA, rho_bar, c_bar)
    np.testing.assert_allclose(vs.numpy(), expected_vs, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pg_adv.numpy(), expected_adv, rtol=1e-10, atol=1e-12)


def test_vtrace_equals_impala_closed_form_without_dones():
    """v_s = V_s + sum_t gamma^(t-s) (prod_{i<t} c_i) delta_t (Espeholt et al. 2018, eq. 1)."""
    traj = _random_trajectories(seed=7, p_done=-1.0, p_valid=1.1)
    rho_bar, c_bar = 1.2, 0.9
    vs, _ = vtrace(
        traj["ratios"], traj["rewards"], traj["dones"], traj["values"], traj["valids"], GAMMA, rho_bar, c_bar
    )
    r, v, ratio = traj["rewards"].numpy(), traj["values"].numpy(), traj["ratios"].numpy()
    rhos, cs = np.minimum(rho_bar, ratio), np.minimum(c_bar, ratio)
    deltas = rhos * (r + GAMMA * v[:, 1:] - v[:, :-1])  # [E, T]
    expected = np.zeros((NUM_ENVS, NUM_STEPS))
    for e in range(NUM_ENVS):
        for s in range(NUM_STEPS):
            correction = sum(GAMMA ** (t - s) * np.prod(cs[e, s:t]) * deltas[e, t] for t in range(s, NUM_STEPS))
            expected[e, s] = v[e, s] + correction
    np.testing.assert_allclose(vs.numpy(), expected, rtol=1e-10)


def test_vtrace_on_policy_gives_n_step_returns_and_gae_lambda_one():
    traj = _random_trajectories(seed=8, p_valid=1.1)
    rewards, dones, values, valids = traj["rewards"], traj["dones"], traj["values"], traj["valids"]
    vs, pg_adv = vtrace(torch.ones_like(rewards), rewards, dones, values, valids, GAMMA, 1.0, 1.0)
    n_step_returns = calculate_discounted_sum_torch(rewards.T, dones.T, valids[:, :-1].T, GAMMA, values[:, -1]).T
    torch.testing.assert_close(vs, n_step_returns)
    torch.testing.assert_close(pg_adv, gae_advantages(rewards, dones, values, valids, GAMMA, 1.0))


def test_done_on_invalid_step_cuts_bootstrap():
    rewards = torch.tensor([[1.0, 5.0]])
    dones = torch.tensor([[0.0, 1.0]])
    values = torch.tensor([[0.5, 7.0, 100.0]])
    valids = torch.tensor([[True, False, True]])
    advantages = gae_advantages(rewards, dones, values, valids, GAMMA, 0.95)
    vs, _ = vtrace(torch.ones_like(rewards), rewards, dones, values, valids, GAMMA, 1.0, 1.0)
    torch.testing.assert_close(advantages, torch.tensor([[0.5, 0.0]]))
    torch.testing.assert_close(vs, torch.tensor([[1.0, 7.0]]))


def _recurrence_by_definition(u: np.ndarray, m: np.ndarray, last: np.ndarray) -> np.ndarray:
    y = np.zeros_like(u)
    for e in range(u.shape[0]):
        following = last[e]
        for t in reversed(range(u.shape[1])):
            following = y[e, t] = u[e, t] + m[e, t] * following
    return y


@pytest.mark.parametrize("walk_step_by_step", [False, True])
def test_backward_linear_recurrence_matches_its_definition(monkeypatch, walk_step_by_step: bool):
    """Both ways of solving ``y_t = u_t + m_t y_{t+1}``: the closed form, and the loop used for very long rollouts."""
    if walk_step_by_step:
        monkeypatch.setattr(rl_utils, "_MAX_RECURRENCE_ELEMENTS", 0)
    gen = torch.Generator().manual_seed(9)
    u = torch.randn(4, 40, generator=gen, dtype=torch.float64)
    m = torch.rand(4, 40, generator=gen, dtype=torch.float64) * (torch.rand(4, 40, generator=gen) > 0.1)  # some 0
    last = torch.randn(4, generator=gen, dtype=torch.float64)
    expected = _recurrence_by_definition(u.numpy(), m.numpy(), last.numpy())
    np.testing.assert_allclose(backward_linear_recurrence(u, m, last).numpy(), expected, rtol=1e-10, atol=1e-12)
    without_last = _recurrence_by_definition(u.numpy(), m.numpy(), np.zeros(4))
    np.testing.assert_allclose(backward_linear_recurrence(u, m).numpy(), without_last, rtol=1e-10, atol=1e-12)


def test_non_finite_values_on_invalid_steps_do_not_leak():
    """Whatever an inactive agent's step holds (never trained on), valid steps' estimates stay finite and equal."""
    traj = _random_trajectories(seed=10)
    poisoned = {key: value.clone() for key, value in traj.items()}
    invalid_steps = ~traj["valids"]
    poisoned["values"][invalid_steps] = float("nan")
    poisoned["rewards"][invalid_steps[:, :-1]] = float("inf")
    args = ("rewards", "dones", "values", "valids")
    clean, dirty = (
        gae_advantages(*(traj[k] for k in args), GAMMA, 0.95),
        gae_advantages(*(poisoned[k] for k in args), GAMMA, 0.95),
    )
    torch.testing.assert_close(dirty, clean)
    clean_vs, clean_adv = vtrace(traj["ratios"], *(traj[k] for k in args), GAMMA, 1.0, 1.0)
    dirty_vs, dirty_adv = vtrace(poisoned["ratios"], *(poisoned[k] for k in args), GAMMA, 1.0, 1.0)
    step_valid = traj["valids"][:, :-1]
    torch.testing.assert_close(dirty_vs[step_valid], clean_vs[step_valid])
    torch.testing.assert_close(dirty_adv, clean_adv)


def test_make_dones_for_all_container_kinds():
    assert make_dones(False, True) is True
    assert make_dones(False, False) is False
    assert make_dones([True, False, False], [False, False, True]) == [True, False, True]
    np.testing.assert_array_equal(make_dones(np.array([1, 0, 0], bool), np.array([0, 0, 1], bool)), [1, 0, 1])
    result = make_dones(torch.tensor([True, False]), torch.tensor([False, False]))
    assert isinstance(result, torch.Tensor)
    assert result.tolist() == [True, False]


def test_samples_per_trajectory_counts_steps_not_bootstrap_columns():
    from sample_factory.algo.utils.rl_utils import samples_per_trajectory
    from sample_factory.utils.tensor_dict import TensorDict

    n, t = 3, 5
    batch = TensorDict(
        obs=TensorDict(obs=torch.zeros(n, t + 1, 4)),
        rnn_states=torch.zeros(n, t + 1, 8),
        rewards=torch.zeros(n, t),
        valids=torch.zeros(n, t, dtype=torch.bool),  # inactive agents' steps still count
    )
    assert samples_per_trajectory(batch) == n * t
    assert samples_per_trajectory(batch[1]) == t  # one trajectory [T]
    assert samples_per_trajectory(batch[0:0]) == 0


def test_samples_per_trajectory_rejects_what_is_not_a_trajectory():
    from sample_factory.algo.utils.rl_utils import samples_per_trajectory

    with pytest.raises(ValueError, match="'rewards'"):
        samples_per_trajectory({"obs": torch.zeros(2, 3)})
    with pytest.raises(ValueError, match="Tensor"):
        samples_per_trajectory(torch.zeros(2, 3))
