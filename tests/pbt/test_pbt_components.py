"""PBT's parts in-process: the observer's decisions, the learner's hooks, the rollout worker's reward shaping."""

from __future__ import annotations

import logging
import os
import types

import gymnasium as gym
import numpy as np
import pytest
import torch
from algo.learning.test_learner import make_cfg, make_learner, make_trajectories

from sample_factory.algo.learning.learner import Learner
from sample_factory.algo.learning.pbt_exchange import (
    HYPERPARAMETER_BOUNDS,
    load_donor_state,
    policy_cfg_file,
    policy_reward_shaping_file,
    read_json,
    save_donor_state,
    weights_digest,
)
from sample_factory.algo.sampling.env_runner import SplitState
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.wiring import learner_name, rollout_worker_name
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.envs.env_utils import RewardShapingInterface
from sample_factory.pbt.population_based_training import MIN_EPISODES, PopulationBasedTraining

SHAPING = {"win": 1.0, "step": {"penalty": -0.01}}
OBS = gym.spaces.Box(-1.0, 1.0, (3,))


class FakeRunnerComponent:
    def __init__(self, num_policies: int, num_workers: int = 2) -> None:
        self.component_names = [learner_name(p) for p in range(num_policies)]
        self.rollout_workers = [rollout_worker_name(w) for w in range(num_workers)]
        self.sent: list[tuple] = []

    def send(self, name: str, slot: str, *args) -> None:
        self.sent.append((name, slot, *args))


class FakeRunner:
    """What the PBT observer reads and calls on a runner, with the messages it sends recorded."""

    def __init__(self, cfg, shaping=SHAPING, env_info: EnvInfo | None = None) -> None:
        self.cfg = cfg
        self.component = FakeRunnerComponent(cfg.num_policies)
        self.env_info = env_info or EnvInfo(OBS, gym.spaces.Discrete(2), reward_shaping_scheme=shaping)
        self.env_steps = {p: 0 for p in range(cfg.num_policies)}
        self.handlers = []

    def register_episodic_stats_handler(self, handler) -> None:
        self.handlers.append(handler)

    def episode(self, policy_id: int, objective: float, extra=None) -> None:
        msg = {"episodic": {"reward": objective, "len": 10, "true_objective": objective, "episode_extra_stats": extra}}
        for handler in self.handlers:
            handler(self, msg, policy_id)


def pbt_cfg(tmp_path, **overrides):
    cfg = default_cfg(env="pbt_test")
    settings = dict(
        with_pbt=True, num_policies=4, seed=7, train_dir=str(tmp_path), experiment="exp", pbt_start_mutation=100,
        pbt_period_env_steps=50, pbt_replace_fraction=0.25, pbt_mutation_rate=0.5,
    )  # fmt: skip
    settings.update(overrides)
    for key, value in settings.items():
        setattr(cfg, key, value)
    os.makedirs(os.path.join(str(tmp_path), "exp"), exist_ok=True)
    return cfg


def started_pbt(cfg, shaping=SHAPING, env_info: EnvInfo | None = None) -> tuple[PopulationBasedTraining, FakeRunner]:
    runner = FakeRunner(cfg, shaping, env_info)
    pbt = PopulationBasedTraining(cfg, runner)
    pbt.on_init(runner)
    pbt.on_connect_components(runner)
    pbt.on_start(runner)
    return pbt, runner


def feed(runner: FakeRunner, objectives: dict[int, float], n: int = MIN_EPISODES) -> None:
    for policy_id, value in objectives.items():
        for _ in range(n):
            runner.episode(policy_id, value)


def test_a_fresh_population_is_diverse_and_written_to_its_files(tmp_path):
    cfg = pbt_cfg(tmp_path, pbt_mutation_rate=1.0)
    pbt, runner = started_pbt(cfg)
    assert pbt.params[0]["learning_rate"] == cfg.learning_rate  # policy 0: the command line
    assert all(pbt.params[p] != pbt.params[0] for p in (1, 2, 3))  # the others: mutations of it
    for p in range(4):
        assert read_json(policy_cfg_file(cfg, p)) == pbt.params[p]
        assert read_json(policy_reward_shaping_file(cfg, p)) == pbt.reward_shaping[p]
    shaping_msgs = [m for m in runner.component.sent if m[1] == "on_pbt_reward_shaping"]
    assert len(shaping_msgs) == 4 * 2  # every policy's scheme to both rollout workers before sampling


def test_the_worst_policy_is_replaced_by_one_of_the_best_and_the_best_is_kept(tmp_path, caplog):
    cfg = pbt_cfg(tmp_path)
    pbt, runner = started_pbt(cfg)
    runner.component.sent.clear()
    feed(runner, {0: 100.0, 1: 50.0, 2: 10.0, 3: 60.0})
    runner.env_steps = {0: 99, 1: 99, 2: 150, 3: 99}  # only policy 2 has reached --pbt_start_mutation
    with caplog.at_level(logging.INFO):
        pbt.on_training_step(runner, 1)
    assert "PBT: replacing policy 2 with policy 0 (true_objective 10.000 vs 100.000)" in caplog.text
    (share,) = [m for m in runner.component.sent if m[1] == "on_pbt_share_weights"]
    assert share[0] == learner_name(0) and share[2] == 2
    assert share[3] == pbt.params[2] and read_json(policy_cfg_file(cfg, 2)) == pbt.params[2]
    for name, value in pbt.params[2].items():  # after a replacement every value is perturbed, gamma aside
        assert (value == pbt.params[0][name]) == (name == "gamma"), name
    assert len(pbt.objectives[2]) == 0  # its old episodes no longer describe it
    assert pbt.next_round_at[2] == 200 and pbt.next_round_at[0] == 100

    runner.component.sent.clear()
    runner.env_steps = {0: 120, 1: 99, 2: 150, 3: 99}
    pbt.on_training_step(runner, 2)  # policy 0 is the best: nothing happens to it
    assert runner.component.sent == [] and pbt.next_round_at[0] == 170
    assert (pbt.num_replacements, pbt.num_mutations) == (1, 0)
    with caplog.at_level(logging.INFO):
        pbt.on_stop(runner)
    assert "PBT: 1 replacement(s) and 0 mutation(s) in this run over 4 policies" in caplog.text


def test_policies_of_other_spaces_are_never_compared_nor_copied(tmp_path, caplog):
    """Two kinds of agents (policies 0 and 2 act for one, 1 and 3 for the other): policy 1 is ranked among 1 and 3
    only, so its donor is policy 3 although policy 0 has the best objective of all."""
    kinds = EnvInfo(OBS, gym.spaces.Discrete(2), num_agents=2, reward_shaping_scheme=SHAPING,
                    agent_obs_spaces=[OBS, gym.spaces.Box(-1.0, 1.0, (5,))],
                    agent_action_spaces=[gym.spaces.Discrete(2), gym.spaces.Discrete(3)])  # fmt: skip
    pbt, runner = started_pbt(pbt_cfg(tmp_path, pbt_replace_fraction=0.5), env_info=kinds)
    assert pbt.population_of == {0: [0, 2], 1: [1, 3], 2: [0, 2], 3: [1, 3]}
    runner.component.sent.clear()
    feed(runner, {0: 100.0, 1: 10.0, 2: 50.0, 3: 60.0})
    runner.env_steps = {0: 99, 1: 150, 2: 99, 3: 99}
    with caplog.at_level(logging.INFO):
        pbt.on_training_step(runner, 1)
    assert "PBT: replacing policy 1 with policy 3" in caplog.text
    (share,) = [m for m in runner.component.sent if m[1] == "on_pbt_share_weights"]
    assert share[0] == learner_name(3) and share[2] == 1


def test_a_middle_policy_is_mutated_not_replaced(tmp_path):
    cfg = pbt_cfg(tmp_path, pbt_mutation_rate=1.0)
    pbt, runner = started_pbt(cfg)
    runner.component.sent.clear()
    before = dict(pbt.params[1])
    feed(runner, {0: 100.0, 1: 50.0, 2: 10.0, 3: 60.0})
    assert pbt.pbt_round(runner, 1)
    slots = [m[1] for m in runner.component.sent]
    assert "on_pbt_share_weights" not in slots and slots.count("on_pbt_hyperparameters") == 1
    assert pbt.params[1] != before
    assert (pbt.num_replacements, pbt.num_mutations) == (0, 1)
    for name, (low, high) in HYPERPARAMETER_BOUNDS.items():
        assert low <= pbt.params[1][name] <= high


def test_small_gaps_do_not_replace(tmp_path):
    cfg = pbt_cfg(tmp_path, pbt_replace_reward_gap=0.5, pbt_mutation_rate=0.0)
    pbt, runner = started_pbt(cfg)
    runner.component.sent.clear()
    feed(runner, {0: 100.0, 1: 90.0, 2: 70.0, 3: 95.0})  # 30% behind: below the relative gap
    assert pbt.pbt_round(runner, 2)
    assert runner.component.sent == []
    cfg.pbt_replace_reward_gap, cfg.pbt_replace_reward_gap_absolute = 0.1, 50.0  # relative yes, absolute no
    assert pbt.pbt_round(runner, 2) and runner.component.sent == []


def test_no_round_until_every_ranked_policy_has_enough_episodes(tmp_path):
    cfg = pbt_cfg(tmp_path)
    pbt, runner = started_pbt(cfg)
    feed(runner, {0: 100.0}, n=MIN_EPISODES)
    feed(runner, {2: 1.0}, n=MIN_EPISODES - 1)
    runner.env_steps = {p: 1000 for p in range(4)}
    pbt.on_training_step(runner, 1)
    assert pbt.next_round_at == {p: 100 for p in range(4)}  # retried at the next training step


def test_objective_from_extra_stats_and_a_missing_key_warns_once(tmp_path, caplog):
    cfg = pbt_cfg(tmp_path, pbt_target_objective="frags")
    pbt, runner = started_pbt(cfg)
    runner.episode(0, objective=1.0, extra={"frags": 7.0})
    with caplog.at_level(logging.WARNING):
        runner.episode(1, objective=3.0, extra={"kills": 1})
        runner.episode(1, objective=4.0, extra={})
    assert list(pbt.objectives[0]) == [7.0] and list(pbt.objectives[1]) == [3.0, 4.0]
    assert caplog.text.count("--pbt_target_objective=frags is neither") == 1


def test_one_policy_does_nothing_and_says_so_once(tmp_path, caplog):
    cfg = pbt_cfg(tmp_path, num_policies=1)
    with caplog.at_level(logging.INFO):
        pbt, runner = started_pbt(cfg)
        runner.env_steps = {0: 10**6}
        pbt.on_training_step(runner, 1)
    assert caplog.text.count("PBT does nothing") == 1
    assert runner.component.sent == [] and not os.path.exists(policy_cfg_file(cfg, 0))


def test_resume_reads_the_files_back_and_names_them(tmp_path, caplog):
    cfg = pbt_cfg(tmp_path, pbt_mutation_rate=1.0)
    first, _ = started_pbt(cfg)
    with caplog.at_level(logging.INFO):
        resumed, _ = started_pbt(cfg)
    assert resumed.params == first.params and resumed.reward_shaping == first.reward_shaping
    for p in range(4):
        assert f"from {policy_cfg_file(cfg, p)}" in caplog.text
        assert f"from {policy_reward_shaping_file(cfg, p)}" in caplog.text


def test_zz_pbt_summaries(tmp_path):
    pbt, runner = started_pbt(pbt_cfg(tmp_path))
    written = {}
    writer = types.SimpleNamespace(add_scalar=lambda tag, value, step: written.__setitem__(tag, (value, step)))
    pbt.extra_summaries(runner, 1, 1234, writer)
    assert written["zz_pbt/learning_rate"] == (pbt.params[1]["learning_rate"], 1234)
    assert written["zz_pbt/rew_step.penalty"][0] == pbt.reward_shaping[1]["step"]["penalty"]
    assert written["zz_pbt/replacements_total"] == (0, 1234) and written["zz_pbt/mutations_total"] == (0, 1234)


# ---------------------------------------------------------------- learner side
def _learner(seed: int, **overrides) -> Learner:
    return make_learner(make_cfg(**overrides), seed=seed)


def test_new_hyperparameters_apply_at_the_next_step():
    learner = _learner(0)
    learner.set_hyperparameters({"learning_rate": 0.0, "value_loss_coeff": 3.0, "gamma": 0.9})
    assert learner.cfg.value_loss_coeff == 3.0 and learner.cfg.gamma == 0.9 and learner.lr == 0.0
    before = [p.detach().clone() for p in learner.actor_critic.parameters()]
    batch = learner.prepare_batch(make_trajectories(learner.cfg))
    learner.train(batch)
    assert all(torch.equal(a, b) for a, b in zip(before, learner.actor_critic.parameters(), strict=True))
    with pytest.raises(KeyError, match="not_a_flag"):
        learner.set_hyperparameters({"not_a_flag": 1.0})


def test_recipient_takes_the_donors_exact_weights_and_optimizer_state(tmp_path):
    donor, recipient = _learner(1), _learner(2)
    donor.train(donor.prepare_batch(make_trajectories(donor.cfg)))  # optimizer moments exist
    path = str(tmp_path / "donor.pth")
    digest = save_donor_state(donor.actor_critic, donor.optimizer, path)
    version = recipient.policy_version
    recipient.load_donor_state(load_donor_state(path, recipient.device), version_jump=recipient.cfg.max_policy_lag + 1)
    assert weights_digest(recipient.actor_critic.state_dict()) == digest
    for name, tensor in donor.actor_critic.state_dict().items():
        assert torch.equal(tensor, recipient.actor_critic.state_dict()[name]), name
    donor_moments = donor.optimizer.state_dict()["state"]
    recipient_moments = recipient.optimizer.state_dict()["state"]
    assert donor_moments.keys() == recipient_moments.keys()
    for key in donor_moments:
        assert torch.equal(donor_moments[key]["exp_avg"], recipient_moments[key]["exp_avg"])
    assert recipient.policy_version == version + recipient.cfg.max_policy_lag + 1


def test_batches_from_before_a_replacement_are_stale_and_skipped_without_crashing(caplog):
    learner = _learner(3)
    trajectories = make_trajectories(learner.cfg)  # collected at version 0
    learner.load_donor_state(_learner(4).get_checkpoint_state(), version_jump=learner.cfg.max_policy_lag + 1)
    batch = learner.prepare_batch(trajectories)
    assert not batch["valids"].any()  # every sample of the replaced weights is discarded
    with caplog.at_level(logging.WARNING):
        assert learner.train(batch) is None
    assert "every sample of the batch is invalid or stale" in caplog.text


# ---------------------------------------------------------------- rollout worker side
class ShapedTwoAgentEnv(RewardShapingInterface):
    def __init__(self) -> None:
        self.schemes = {0: None, 1: None}

    def get_default_reward_shaping(self):
        return dict(SHAPING)

    def set_reward_shaping(self, reward_shaping, agent_idx) -> None:
        self.schemes[agent_idx] = reward_shaping


def test_each_agent_gets_the_scheme_of_the_policy_that_controls_it():
    cfg = default_cfg(env="fake")
    cfg.num_policies, cfg.with_pbt = 2, True
    worker = RolloutWorker(cfg, EnvInfo(obs_space=None, action_space=None, num_agents=2), 0, None, None, None)
    envs = [ShapedTwoAgentEnv(), ShapedTwoAgentEnv()]
    state = SplitState(4)
    state.policy[:] = [0, 1, 1, 0]  # env 0: agents of policies 0 and 1; env 1: 1 and 0
    state.next_policy[:] = state.policy
    worker.runners = [types.SimpleNamespace(envs=envs, state=state)]
    a, b = {"win": 2.0}, {"win": 3.0}
    worker.on_pbt_reward_shaping(1, b)
    assert envs[0].schemes == {0: None, 1: b} and envs[1].schemes == {0: b, 1: None}
    worker.on_pbt_reward_shaping(0, a)
    assert envs[0].schemes == {0: a, 1: b} and envs[1].schemes == {0: b, 1: a}
    state.next_policy[:] = [1, 1, 0, 0]  # the next rollout's draw: agents 0 and 2 change policy
    worker._switch_policies(worker.runners[0])
    assert np.array_equal(state.policy, [1, 1, 0, 0])
    assert envs[0].schemes == {0: b, 1: b} and envs[1].schemes == {0: a, 1: a}
