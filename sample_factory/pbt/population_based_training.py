"""Population-based training (Jaderberg et al., 2017) as an observer of the runner, in parallel and serial mode.

Every policy of the run (``--num_policies``) is a member of the population. Each time a policy has collected
another ``--pbt_period_env_steps`` env steps (from ``--pbt_start_mutation`` on), its PBT round compares it with the
others by ``--pbt_target_objective`` averaged over their recent episodes (at least ``MIN_EPISODES`` each), or, for
an evaluation result (``eval/avg_reward``, ... with ``--eval_every_env_steps``), by its latest evaluation since its
weights were last replaced:

- among the best ``--pbt_replace_fraction`` of the population: it is left alone;
- among the worst fraction, and behind a randomly chosen best policy by more than both
  ``--pbt_replace_reward_gap`` (relative to the larger magnitude of the two objectives) and
  ``--pbt_replace_reward_gap_absolute``: it is *replaced*. Its learner takes over the donor's weights, normalisers
  and optimiser state (moments included) and the donor's hyper-parameters and reward shaping, every one of them
  perturbed (the "perturb" exploration of the PBT paper: a copy never duplicates its donor);
- otherwise: its hyper-parameters and reward shaping are mutated (``mutation``), its weights are kept.

The runner's main process owns the decisions; learners and rollout workers only receive messages (``wiring``):
``on_pbt_hyperparameters`` and ``on_pbt_share_weights`` to learners (the donor's learner then sends
``on_pbt_take_weights`` to the recipient's), ``on_pbt_reward_shaping`` to every rollout worker. The current values
of every policy live in ``policy_NN_cfg.json`` / ``policy_NN_reward_shaping.json`` (``algo.learning.pbt_exchange``),
which a resumed run reads back. A fresh run starts policy 0 from the command line's values and every other policy from a
mutation of them, so the population is diverse from the first step.
"""

from __future__ import annotations

import random
from collections import deque
from typing import TYPE_CHECKING, Any

from sample_factory.algo.learning.pbt_exchange import (
    hyperparameters_of,
    load_policy_hyperparameters,
    policy_cfg_file,
    policy_reward_shaping_file,
    read_json,
    write_json_atomic,
)
from sample_factory.algo.runners.runner import AlgoObserver
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.wiring import learner_name
from sample_factory.pbt.mutation import (
    describe_changes,
    flat_numbers,
    mutate_hyperparameters,
    mutate_reward_shaping,
    perturb_batch_size,
    perturb_exponential_decay,
    perturb_float,
    perturb_vtrace,
)
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, PolicyID

if TYPE_CHECKING:
    from sample_factory.algo.runners.runner import Runner

# a policy is ranked only once this many of its episodes (since its last replacement) have ended
MIN_EPISODES = 10
BUILT_IN_OBJECTIVES = ("true_objective", "reward", "len")
EVAL_OBJECTIVE_PREFIX = "eval/"  # the evaluator's results: ranked by the latest evaluation of each policy


__all__ = [
    "PopulationBasedTraining",
    "load_model_signal",
    "perturb_batch_size",
    "perturb_exponential_decay",
    "perturb_float",
    "perturb_vtrace",
    "policy_cfg_file",
    "policy_reward_shaping_file",
    "save_model_signal",
    "update_cfg_signal",
]


def save_model_signal(policy_id: PolicyID) -> str:
    """``"component.message"`` that asks the learner of ``policy_id`` to share its weights (the donor of a
    replacement): it saves them and sends them to the recipient's learner."""
    return f"{learner_name(policy_id)}.on_pbt_share_weights"


def load_model_signal(policy_id: PolicyID) -> str:
    """``"component.message"`` on which the learner of ``policy_id`` loads a donor's weights (sent by the donor)."""
    return f"{learner_name(policy_id)}.on_pbt_take_weights"


def update_cfg_signal(policy_id: PolicyID) -> str:
    """``"component.message"`` that gives the learner of ``policy_id`` its mutated hyper-parameters."""
    return f"{learner_name(policy_id)}.on_pbt_hyperparameters"


def _send(runner: Runner, signal: str, *args: Any) -> None:
    component, message = signal.rsplit(".", 1)
    runner.component.send(component, message, *args)


class PopulationBasedTraining(AlgoObserver):
    """The PBT component of a run; ``make_runner`` registers one when ``--with_pbt=True``."""

    def __init__(self, cfg: Config, runner: Runner | None = None) -> None:
        self.cfg = cfg
        self.runner = runner
        self.num_policies = cfg.num_policies
        self.enabled = bool(cfg.with_pbt) and self.num_policies > 1
        self.rng = random.Random(cfg.seed) if cfg.seed is not None else random.Random()
        self.params: dict[PolicyID, dict[str, float]] = {}
        self.reward_shaping: dict[PolicyID, dict[str, Any] | None] = {}
        self.default_reward_shaping: dict[str, Any] | None = None
        self.by_evaluation = cfg.pbt_target_objective.startswith(EVAL_OBJECTIVE_PREFIX)
        # an evaluation averages --eval_episodes episodes already: the latest one of each policy is its objective
        window, self.min_values = (1, 1) if self.by_evaluation else (max(MIN_EPISODES, cfg.stats_avg), MIN_EPISODES)
        self.objectives: dict[PolicyID, deque[float]] = {p: deque(maxlen=window) for p in range(self.num_policies)}
        self.replaced_at: dict[PolicyID, int] = {}  # env steps of each policy's latest replacement
        self.next_round_at = {p: cfg.pbt_start_mutation for p in range(self.num_policies)}
        self.num_replacements = 0
        self.num_mutations = 0
        self._warned_objective = False
        # the policies each one is ranked among (all of them, unless agents differ: then those of its spaces)
        self.population_of: dict[PolicyID, list[PolicyID]] = {
            p: list(range(self.num_policies)) for p in self.objectives
        }

    # ---------------------------------------------------------------- observer hooks
    def on_init(self, runner: Runner) -> None:
        if not self.cfg.with_pbt:
            return
        if not self.enabled:
            log.info(
                "PBT: --with_pbt=True with --num_policies=1: there is no population to compare, so PBT does nothing "
                "in this run (use --num_policies=4 or more)"
            )
            return
        if not self.by_evaluation:
            runner.register_episodic_stats_handler(self.on_episode)

    def on_connect_components(self, runner: Runner) -> None:
        """The env is known (its reward-shaping scheme), no process has started: settle every policy's values."""
        if not self.enabled:
            return
        if not all(learner_name(p) in runner.component.component_names for p in range(self.num_policies)):
            log.warning("PBT: this run has no learners (a sampling-only run): PBT does nothing")
            self.enabled = False
            return
        self.default_reward_shaping = runner.env_info.reward_shaping_scheme
        spaces = PolicySpaces(self.cfg, runner.env_info)
        # policies of other spaces (another kind of agent) are never compared with, nor copied into, each other
        self.population_of = {p: spaces.policies_of_group(spaces.policy_group[p]) for p in range(self.num_policies)}
        if spaces.heterogeneous:
            log.info(
                "PBT: one population per kind of agent: %s", sorted({tuple(v) for v in self.population_of.values()})
            )
        for policy_id in range(self.num_policies):
            self._init_policy(policy_id)

    def on_start(self, runner: Runner) -> None:
        """Rollout workers apply each policy's reward shaping before sampling begins (their inbox is in order)."""
        if not self.enabled or self.default_reward_shaping is None:
            return
        for policy_id in range(self.num_policies):
            self._send_reward_shaping(runner, policy_id)

    def on_training_step(self, runner: Runner, training_iteration_since_resume: int) -> None:
        if not self.enabled:
            return
        for policy_id, env_steps in runner.env_steps.items():
            if env_steps >= self.next_round_at[policy_id] and self.pbt_round(runner, policy_id):
                self.next_round_at[policy_id] = env_steps + self.cfg.pbt_period_env_steps

    def extra_summaries(self, runner: Runner, policy_id: PolicyID, env_steps: int, writer) -> None:
        """``zz_pbt/<name>`` scalars: the policy's current hyper-parameters and reward-shaping terms."""
        if not self.enabled or policy_id not in self.params:
            return
        for name, value in self.params[policy_id].items():
            writer.add_scalar(f"zz_pbt/{name}", value, env_steps)
        for name, value in flat_numbers(self.reward_shaping.get(policy_id)).items():
            writer.add_scalar(f"zz_pbt/rew_{name}", value, env_steps)
        writer.add_scalar("zz_pbt/replacements_total", self.num_replacements, env_steps)
        writer.add_scalar("zz_pbt/mutations_total", self.num_mutations, env_steps)

    def on_stop(self, runner: Runner) -> None:
        """One summary line, so a log read from the end says whether the population evolved at all."""
        if self.enabled:
            log.info(
                "PBT: %d replacement(s) and %d mutation(s) in this run over %d policies",
                self.num_replacements, self.num_mutations, self.num_policies,
            )  # fmt: skip

    # ---------------------------------------------------------------- objective
    def on_episode(self, runner: Runner, msg: dict, policy_id: PolicyID) -> None:
        """Episodic stats handler: one finished episode of ``policy_id``."""
        value = self._objective_of(msg["episodic"])
        if value is not None:
            self.objectives[policy_id].append(value)

    def on_evaluation(self, runner: Runner, policy_id: PolicyID, env_steps: int, results: dict[str, float]) -> None:
        """With an ``eval/`` target objective: the policy's latest evaluation is its objective."""
        if not (self.enabled and self.by_evaluation) or env_steps < self.replaced_at.get(policy_id, -1):
            return  # (an evaluation of the weights a replacement discarded)
        value = results.get(self.cfg.pbt_target_objective)
        if value is None:
            if not self._warned_objective:
                log.warning(
                    "PBT: --pbt_target_objective=%s is not among the evaluation results (%s): no ranking is possible",
                    self.cfg.pbt_target_objective, ", ".join(sorted(results)),
                )  # fmt: skip
                self._warned_objective = True
            return
        self.objectives[policy_id].append(float(value))

    def _objective_of(self, episode: dict) -> float | None:
        target = self.cfg.pbt_target_objective
        if target in BUILT_IN_OBJECTIVES:
            return float(episode[target])
        extra = episode.get("episode_extra_stats") or {}
        if target in extra:
            return float(extra[target])
        if not self._warned_objective:
            log.warning(
                "PBT: --pbt_target_objective=%s is neither one of %s nor a key of the episode's "
                "info['episode_extra_stats'] (keys: %s); ranking by true_objective instead",
                target, list(BUILT_IN_OBJECTIVES), sorted(extra),
            )  # fmt: skip
            self._warned_objective = True
        return float(episode["true_objective"])

    def average_objectives(self) -> dict[PolicyID, float]:
        """The mean recent objective of every policy with enough episodes (one evaluation for an ``eval/`` target)."""
        return {p: sum(v) / len(v) for p, v in self.objectives.items() if len(v) >= self.min_values}

    # ---------------------------------------------------------------- one round
    def pbt_round(self, runner: Runner, policy_id: PolicyID) -> bool:
        """Replace, mutate or keep ``policy_id``; False when the population cannot be ranked yet (too few episodes)."""
        population = self.population_of[policy_id]
        objectives = {p: value for p, value in self.average_objectives().items() if p in population}
        if policy_id not in objectives or len(objectives) < 2:
            return False
        ranked = sorted(objectives, key=objectives.get)  # worst first
        num_extreme = max(1, int(len(ranked) * self.cfg.pbt_replace_fraction))
        best, worst = ranked[-num_extreme:], ranked[:num_extreme]
        if policy_id in best:
            log.debug("PBT: policy %d is among the best (%.3f), kept as it is", policy_id, objectives[policy_id])
            return True
        if policy_id in worst:
            donor = self.rng.choice(best)
            if self._gap_is_large(objectives[donor], objectives[policy_id]):
                self._replace(runner, policy_id, donor, objectives)
                return True
        self._mutate(runner, policy_id)
        return True

    def _gap_is_large(self, donor_objective: float, objective: float) -> bool:
        gap = donor_objective - objective
        scale = max(abs(donor_objective), abs(objective), 1e-9)
        return gap > self.cfg.pbt_replace_reward_gap_absolute and gap / scale > self.cfg.pbt_replace_reward_gap

    def _replace(self, runner: Runner, policy_id: PolicyID, donor: PolicyID, objectives: dict) -> None:
        log.info(
            "PBT: replacing policy %d with policy %d (%s %.3f vs %.3f)",
            policy_id, donor, self.cfg.pbt_target_objective, objectives[policy_id], objectives[donor],
        )  # fmt: skip
        self.num_replacements += 1
        params, shaping = self._mutated_values(policy_id, self.params[donor], self.reward_shaping.get(donor), rate=1.0)
        self.objectives[policy_id].clear()  # its past episodes were played by the weights it no longer has
        self.replaced_at[policy_id] = runner.env_steps.get(policy_id, 0)
        self._set_values(policy_id, params, shaping)
        _send(runner, save_model_signal(donor), policy_id, params)
        self._send_reward_shaping(runner, policy_id)

    def _mutate(self, runner: Runner, policy_id: PolicyID) -> None:
        params, shaping = self._mutated_values(policy_id, self.params[policy_id], self.reward_shaping.get(policy_id))
        if params == self.params[policy_id] and shaping == self.reward_shaping.get(policy_id):
            return
        self.num_mutations += 1  # rounds that mutated a policy in place (not the perturbation of a replacement)
        self._set_values(policy_id, params, shaping)
        _send(runner, update_cfg_signal(policy_id), params)
        self._send_reward_shaping(runner, policy_id)

    def _mutated_values(
        self, policy_id: PolicyID, params: dict[str, float], shaping: dict[str, Any] | None, rate: float | None = None
    ) -> tuple[dict[str, float], dict[str, Any] | None]:
        """Mutations of ``params`` and ``shaping`` (a donor's or the policy's own), each change logged; ``rate``:
        the probability of each change (default ``--pbt_mutation_rate``)."""
        new_params, changes = mutate_hyperparameters(params, self.cfg, self.rng, rate)
        new_shaping = shaping
        if shaping is not None:
            default = self.default_reward_shaping
            new_shaping, shaping_changes = mutate_reward_shaping(shaping, default, self.cfg, self.rng, rate)
            changes += shaping_changes
        if changes:
            log.info("PBT: mutating policy %d: %s", policy_id, describe_changes(changes))
        return new_params, new_shaping

    # ---------------------------------------------------------------- values and files
    def _init_policy(self, policy_id: PolicyID) -> None:
        """Values from the policy's files when they exist (resume), else the command line's, mutated for p > 0."""
        base = hyperparameters_of(self.cfg)
        loaded = load_policy_hyperparameters(self.cfg, policy_id, base)
        shaping_file = policy_reward_shaping_file(self.cfg, policy_id)
        loaded_shaping = read_json(shaping_file) if self.default_reward_shaping is not None else None
        if loaded is not None:
            log.info(
                "PBT: loaded the hyper-parameters of policy %d from %s", policy_id, policy_cfg_file(self.cfg, policy_id)
            )
        if loaded_shaping is not None:
            log.info("PBT: loaded the reward shaping of policy %d from %s", policy_id, shaping_file)
        params = {**base, **(loaded or {})}
        shaping = loaded_shaping if loaded_shaping is not None else self.default_reward_shaping
        if policy_id > 0 and loaded is None:
            params, shaping = self._mutated_values(policy_id, params, shaping)
        self._set_values(policy_id, params, shaping)

    def _set_values(self, policy_id: PolicyID, params: dict[str, float], shaping: dict[str, Any] | None) -> None:
        self.params[policy_id] = params
        self.reward_shaping[policy_id] = shaping
        write_json_atomic(policy_cfg_file(self.cfg, policy_id), params)
        if shaping is not None:
            write_json_atomic(policy_reward_shaping_file(self.cfg, policy_id), shaping)

    def _send_reward_shaping(self, runner: Runner, policy_id: PolicyID) -> None:
        shaping = self.reward_shaping.get(policy_id)
        if shaping is None:
            return
        for worker in runner.component.rollout_workers:
            runner.component.send(worker, "on_pbt_reward_shaping", policy_id, shaping)
