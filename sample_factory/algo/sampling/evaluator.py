"""Evaluator: plays evaluation episodes with the latest published weights while training runs.

With ``--eval_every_env_steps=N`` the run has one evaluator beside the rollout workers: in a process of its own in
parallel mode (niced, so that collection keeps its share of the CPU), on the runner's loop in serial mode. The runner
asks for one evaluation at a time (``on_evaluate(policy, env_steps)``) once a policy's env steps pass the next
multiple of N. The evaluator then copies that policy's latest published weights (``PolicyWeights.load_into``: no lock,
the learner is never held up), plays ``--eval_episodes`` episodes on ``--eval_num_envs`` envs of ``--eval_env``
(sampled actions, or the most likely ones with ``--eval_deterministic``), and reports the averages tagged with the
env steps of the request (``on_evaluation_done``). With ``--save_best_metric=eval/...`` it also writes the best
checkpoint itself, from the very weights it evaluated (the learner's have moved on meanwhile). It steps its envs one
batched forward pass per loop iteration and returns to its event loop in between: heartbeats, stop requests and, in
serial mode, every training component keep running, so an evaluation never blocks training.

Episodes are counted as they start (``evaluation_episodes``, the rule of ``sample_factory.eval``). With ``--seed``
every round starts its envs from the same seeds (common random numbers: two rounds differ by their weights, not by
the luck of their draws). An exception of an eval env ends the round only: it is reported with its traceback
(``on_evaluation_failed``), the envs are made again and the next round goes ahead.

A run that reaches its end (``--train_for_env_steps`` or ``--train_for_seconds``) sends, before its stop request, the
evaluations due by then (``on_final_evaluations``): the evaluator then finishes them, and the round under way, before
it stops, so a slow evaluator (niced, on a busy machine) still writes every evaluation the schedule made due. A stop
for any other reason (an interrupt, a failure) drops the rounds at once.
"""

from __future__ import annotations

import math
import sys
import time
import traceback
from dataclasses import dataclass

from sample_factory.algo.sampling.evaluation_episodes import (
    ActorTracker,
    AgentPolicy,
    EpisodeBudget,
    EpisodeStepper,
    episode_averages,
    make_eval_envs,
    single_policy,
)
from sample_factory.algo.utils.checkpoints import (
    EVAL_METRIC_PREFIX,
    CheckpointWriteError,
    best_checkpoint_value,
    save_best_checkpoint,
)
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.policy_weights import PolicyWeights
from sample_factory.algo.utils.wiring import RUNNER, evaluator_name
from sample_factory.envs.action_conversion import make_action_converter
from sample_factory.envs.contract_errors import ContractError
from sample_factory.envs.env_info import EnvInfo, extract_env_info
from sample_factory.messaging.event_loop import Component, Router
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.logging_setup import log
from sample_factory.utils.torch_utils import init_torch_runtime, seed_torch
from sample_factory.utils.typing import Config, PolicyID

HEARTBEAT_PERIOD = 1.0
# the evaluator's torch stream and env seeds, away from those of the rollout and inference workers
EVAL_SEED_OFFSET = 7_000_000


def eval_env_name(cfg: Config) -> str:
    """The env the evaluator plays: ``--eval_env``, or the training env."""
    return cfg.eval_env or cfg.env


def num_evaluator_envs(cfg: Config, env_info: EnvInfo) -> int:
    """``--eval_num_envs``, but no more than the episodes need at once (envs beyond them would only idle)."""
    needed = math.ceil(cfg.eval_episodes / max(1, env_info.num_agents))
    return max(1, min(cfg.eval_num_envs, needed))


@dataclass
class EvaluationRound:
    """One evaluation under way: whose weights, tagged with which env steps, and its episodes so far."""

    policy_id: PolicyID
    env_steps: int
    version: int
    tracker: ActorTracker
    started: float
    cpu_started: float  # this process's CPU time: what the round cost the machine, whatever the scheduler did
    frames: int = 0


class Evaluator(Component):
    """The evaluator component; ``weights`` are every policy's published weights."""

    def __init__(
        self, cfg: Config, env_info: EnvInfo, router: Router, weights: list[PolicyWeights], serial: bool
    ) -> None:
        super().__init__(evaluator_name(), router)
        self.cfg = cfg
        self.env_info = env_info
        self.weights = weights
        self.serial = serial
        self.device = policy_device(cfg, 0)
        self.spaces = PolicySpaces(cfg, env_info)  # agents of different spaces: one model per kind of agent
        self.models: list = []
        self.envs: list = []
        self.stepper: EpisodeStepper | None = None
        self.current: EvaluationRound | None = None
        self.pending: list[tuple[PolicyID, int]] = []
        self.best: dict[PolicyID, float | None] = {}  # best --save_best_metric=eval/... so far, per policy
        self.finish_before_stop = False  # the run reached its end: due rounds finish before the evaluator stops
        self.stop_when_done = False  # stop requested while such rounds were left

    # ---------------------------------------------------------------- life cycle
    def on_start(self) -> None:
        try:
            if not self.serial:  # one process of its own: its own thread count and random stream
                init_torch_runtime(self.cfg, max_num_threads=1)
                seed_torch(self.cfg, process_offset=EVAL_SEED_OFFSET)
            policies = self._make_policies()
            self.send(RUNNER, "on_envs_starting", self.name)  # env creation that hangs ends the start-up in time
            self.envs = self._make_envs()
            self.stepper = EpisodeStepper(
                self.envs, self.env_info, policies, self.device, self.cfg, self.cfg.eval_deterministic
            )
        except Exception:
            self._report_error()
            return
        self.loop.add_timer(HEARTBEAT_PERIOD, lambda: self.send(RUNNER, "on_heartbeat", self.name))
        self.send(RUNNER, "on_component_ready", self.name)

    def _make_policies(self) -> list[AgentPolicy]:
        """One model per kind of agent (one in all when the agents are alike), each built for its spaces. A round
        loads the evaluated policy into the model of its kind, and the first policy of every other kind into
        theirs: the other agents play with their own trained weights."""
        spaces = self.spaces
        self.models = []
        for group in range(spaces.num_groups):
            obs_space, action_space = spaces.group_spaces(group)
            model = create_actor_critic(self.cfg, obs_space, action_space)
            model.eval()
            model.model_to_device(self.device)
            self.models.append(model)
        if not spaces.heterogeneous:
            return single_policy(self.models[0])
        return [
            AgentPolicy(model, self._agents_of_group(g), make_action_converter(spaces.group_spaces(g)[1]))
            for g, model in enumerate(self.models)
        ]

    def _agents_of_group(self, group: int) -> list[int]:
        return [a for a, g in enumerate(self.spaces.agent_group) if g == group]

    def _make_envs(self) -> list:
        """The eval envs, after checking that the first one has the spaces the policy was built for."""
        cfg, name = self.cfg, eval_env_name(self.cfg)
        first_env_id = cfg.num_workers * cfg.num_envs_per_worker  # after every rollout worker's env ids
        envs = make_eval_envs(cfg, self.env_info, num_evaluator_envs(cfg, self.env_info), name, cfg.num_workers,
                              first_env_id)  # fmt: skip
        found = extract_env_info(envs[0].env, cfg)
        mismatch = [
            f"{what} {got} (the policy's: {expected})"
            for what, got, expected in (
                ("observation space", found.obs_space, self.env_info.obs_space),
                ("action space", found.action_space, self.env_info.action_space),
                ("number of agents", found.num_agents, self.env_info.num_agents),
            )
            if got != expected
        ]
        if mismatch:
            for env in envs:
                env.close()
            raise ContractError(
                f"--eval_env={name} has {'; '.join(mismatch)}: the policy trained on --env={cfg.env} cannot act "
                "there. Evaluate on a variant with the same spaces, or leave --eval_env out"
            )
        return envs

    def on_final_evaluations(self, requests: list[tuple[PolicyID, int]]) -> None:
        """The run reached its end: ``requests`` (policy, env steps) were due by then. They, and the round under way,
        finish before this evaluator stops (``on_stop_requested`` follows)."""
        self.finish_before_stop = True
        for policy_id, env_steps in requests:
            self.on_evaluate(policy_id, env_steps)

    def on_stop_requested(self) -> None:
        if self.finish_before_stop and (self.current is not None or self.pending):
            self.stop_when_done = True
            log.info("%s: finishing the %d evaluation(s) due by the end of the run before stopping", self.name,
                     len(self.pending) + (self.current is not None))  # fmt: skip
            return
        self._stop_now()

    def _stop_now(self) -> None:
        self.stop_when_done = False
        self.current = None
        self.pending.clear()
        self._close_envs()
        self.send(RUNNER, "on_component_stopped", self.name, self.timing.tree_str())
        self.loop.component_stopped(self.name)

    def on_stop(self) -> None:
        self._close_envs()

    def _close_envs(self) -> None:
        envs, self.envs = self.envs, []
        for env in envs:
            try:
                env.close()
            except Exception as exc:  # closing a broken env must not hide why the run ends
                log.warning("%s: closing an eval env failed: %s", self.name, exc)

    # ---------------------------------------------------------------- rounds
    def on_evaluate(self, policy_id: PolicyID, env_steps: int) -> None:
        """Evaluate ``policy_id``'s weights as they are now, tagged with ``env_steps``."""
        if self.current is not None:  # the runner sends one request at a time; keep a stray one for later
            self.pending.append((policy_id, env_steps))
            return
        self._begin(policy_id, env_steps)

    def _begin(self, policy_id: PolicyID, env_steps: int) -> None:
        spaces, own_group = self.spaces, self.spaces.policy_group[policy_id]
        with self.timing.add_time("load_weights"):
            for group, model in enumerate(self.models):
                if group != own_group:
                    self.weights[spaces.policies_of_group(group)[0]].load_into(model)
            version = self.weights[policy_id].load_into(self.models[own_group])
        tracker = ActorTracker([env.num_agents for env in self.envs], EpisodeBudget(self.cfg.eval_episodes))
        seed = self.cfg.seed
        seeds = [None if seed is None else int(seed) + EVAL_SEED_OFFSET + i for i in range(len(self.envs))]
        try:
            self.stepper.begin(tracker, seeds)
        except Exception:
            self._round_failed(policy_id, env_steps)
            return
        self.current = EvaluationRound(policy_id, env_steps, version, tracker, time.monotonic(), time.process_time())
        self.loop.call_later(0.0, self._advance)

    def _advance(self) -> None:
        """One policy step of the round under way, then back to the event loop."""
        current = self.current
        if current is None:
            return
        try:
            with self.timing.add_time("evaluate"):
                current.frames += self.stepper.step()
        except Exception:
            self.current = None
            self._round_failed(current.policy_id, current.env_steps)
            return
        if current.tracker.done():
            self._finish(current)
        else:
            self.loop.call_later(0.0, self._advance)

    def _finish(self, current: EvaluationRound) -> None:
        records = current.tracker.records
        if self.spaces.heterogeneous:  # the evaluated policy's own agents: the others play another game
            agents = self._agents_of_group(self.spaces.policy_group[current.policy_id])
            records = [record for record in records if record.agent in agents]
        results = episode_averages(records)
        results.update(
            policy_version=float(current.version),
            seconds=time.monotonic() - current.started,
            cpu_seconds=time.process_time() - current.cpu_started,
            env_steps_played=float(current.frames),
        )
        self.current = None
        self._save_if_best(current, results)
        self.send(RUNNER, "on_evaluation_done", current.policy_id, current.env_steps, results)
        self._next_pending()

    def _save_if_best(self, current: EvaluationRound, results: dict[str, float]) -> None:
        """``--save_best_metric=eval/<name>``: the evaluated weights become the policy's best checkpoint when they
        beat every earlier evaluation (once ``--save_best_after`` env steps are done)."""
        cfg, policy_id = self.cfg, current.policy_id
        metric = cfg.save_best_metric
        if not metric.startswith(EVAL_METRIC_PREFIX) or current.env_steps < cfg.save_best_after:
            return
        value = results.get(metric[len(EVAL_METRIC_PREFIX) :])
        if value is None:
            log.warning("--save_best_metric=%s is not among the evaluation results: %s", metric, sorted(results))
            return
        if policy_id not in self.best:  # a resumed run: the bar is the best saved before
            self.best[policy_id] = best_checkpoint_value(cfg, policy_id, metric)
        best = self.best[policy_id]
        if best is not None and value <= best:
            return
        model = self.models[self.spaces.policy_group[policy_id]]
        state = {"model": model.state_dict(), "policy_version": current.version,
                 "env_steps": current.env_steps, "best_metric": value}  # fmt: skip
        try:
            with self.timing.add_time("save_best"):
                path = save_best_checkpoint(cfg, policy_id, state, current.version, current.env_steps, metric, value)
        except CheckpointWriteError as exc:
            log.error("%s; training goes on", exc)
            return
        self.best[policy_id] = value
        log.info("Policy %d: new best %s %.3f (the evaluated weights), saved %s", policy_id, metric, value, path)

    def _round_failed(self, policy_id: PolicyID, env_steps: int) -> None:
        """An eval env raised: report it, make the envs again, go on with the next request."""
        tb = traceback.format_exc()
        log.error("%s: the evaluation of policy %d at %d env steps failed:\n%s", self.name, policy_id, env_steps, tb)
        self.send(RUNNER, "on_evaluation_failed", policy_id, env_steps, tb.strip().splitlines()[-1])
        self._close_envs()
        try:
            self.envs = self.stepper.envs = self._make_envs()
        except Exception:
            self._report_error()
            return
        self._next_pending()

    def _next_pending(self) -> None:
        if self.pending:
            self._begin(*self.pending.pop(0))
        elif self.stop_when_done and self.current is None:
            self._stop_now()

    def _report_error(self) -> None:
        exc = sys.exc_info()[1]
        tb = str(exc) if isinstance(exc, ContractError) else traceback.format_exc()  # a contract error says it all
        log.error("%s failed:\n%s", self.name, tb)
        self.send(RUNNER, "on_component_error", self.name, tb)
        if self.stop_when_done:  # its envs are gone: the rounds left cannot finish
            self._stop_now()
