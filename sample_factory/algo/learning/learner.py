"""The learner of one policy: batches of trajectories in, SGD steps on the actor-critic out (APPO).

Two entry points, meant to run on two threads so data preparation overlaps SGD (``--train_in_background_thread``):

- ``prepare_batch`` (main thread): moves trajectories to the device, drops stale steps, shapes rewards, updates the
  running normalisers once, computes bootstrap values and GAE advantages/returns, and flattens everything into
  ``[N*T]`` samples, trajectory-major, so every ``recurrence``-long segment is contiguous.
- ``train`` (training thread): ``--num_epochs`` x ``--num_batches_per_epoch`` minibatches of PPO with clipped value
  loss, optional V-trace targets (recomputed per minibatch from the current policy), exploration and KL terms.

The two threads share the model: the running normalisers are only used inside ``normalizers_mode`` (which
serialises them, see ``batch_preparation``); the bootstrap forward pass of ``prepare_batch`` may read weights while
the optimiser writes them, which can only perturb one batch's bootstrap values slightly. Each thread has its own
``Timing`` (a ``Timing`` is not thread-safe).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch
from torch import Tensor

from sample_factory.algo.learning.batch_preparation import (
    apply_returns_normalizer,
    bootstrap_time_outs,
    discard_stale,
    flatten_steps,
    normalize_observations,
    predict_values,
    shape_rewards,
)
from sample_factory.algo.learning.bptt import core_forward_bptt
from sample_factory.algo.learning.gradient_averaging import AveragedSgdStep, kl_mean_over_ranks
from sample_factory.algo.learning.learner_fast_paths import LearnerFastPaths, use_gru_bptt
from sample_factory.algo.learning.legacy_publishing import (  # noqa: F401 (model_initialization_data: SF2's path)
    LegacyPublishing,
    model_initialization_data,
)
from sample_factory.algo.learning.losses import (
    PPOLossInputs,
    exploration_terms,
    normalize_advantages,
    ppo_loss,
    ppo_loss_autograd,
)
from sample_factory.algo.learning.lr_schedule import LrSchedule, make_lr_schedule
from sample_factory.algo.learning.lr_schedulers import (  # noqa: F401 (Sample Factory 2's names at its path)
    KlAdaptiveScheduler,
    KlAdaptiveSchedulerPerEpoch,
    KlAdaptiveSchedulerPerMinibatch,
    LearningRateScheduler,
    LinearDecayScheduler,
    get_lr_scheduler,
)
from sample_factory.algo.learning.minibatches import Minibatch, epoch_minibatches
from sample_factory.algo.learning.optimizers import SgdStep, make_optimizer
from sample_factory.algo.learning.training_stats import ReportedSamples, reported_stats, summarize
from sample_factory.algo.utils.rl_utils import gae_advantages, vtrace
from sample_factory.cfg.validation import effective_recurrence
from sample_factory.model.action_distributions import ActionDistribution, get_action_distribution
from sample_factory.model.actor_critic import ActorCritic, create_actor_critic
from sample_factory.model.encoder import ACTION_MASK_KEY
from sample_factory.utils.flags import flag_value
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.timing import Timing
from sample_factory.utils.torch_utils import ValidMean, as_channels_last, trains_faster_channels_last
from sample_factory.utils.typing import Config, PolicyID
from sample_factory.utils.utils import log

if TYPE_CHECKING:
    from sample_factory.algo.utils.model_sharing import ParameterServer
    from sample_factory.envs.env_info import EnvInfo
    from sample_factory.utils.rank_group import RankGroup


@dataclass
class PolicyOutputs:
    """The current policy evaluated on a minibatch: values [B], log-probs of the taken actions [B], distribution."""

    values: Tensor
    log_probs: Tensor
    distribution: ActionDistribution


class Learner:
    """Optimises one policy's actor-critic; usable directly in tests, no processes involved.

    Attributes: ``actor_critic``, ``optimizer``, ``lr_schedule``, ``device`` (set by ``init``), ``train_step``
    (+1 per ``train`` call), ``policy_version`` (+1 per SGD step), ``recurrence`` (effective BPTT length),
    ``timing`` (training thread) and ``batch_timing`` (``prepare_batch``), ``last_summary_time`` (for the caller).

    The constructor also takes Sample Factory 2's ``(cfg, env_info, policy_versions_tensor, policy_id,
    param_server)``: the learner then writes its ``policy_version`` into ``policy_versions_tensor[policy_id]`` and
    publishes its weights through ``param_server`` (``ParameterServer.init`` in ``init``, ``update_weights`` after
    each ``train`` and after ``load_checkpoint_state``). Our own older form ``Learner(cfg, env_info, policy_id)``
    still works: an integer in third place is the policy id.
    """

    def __init__(
        self,
        cfg: Config,
        env_info: EnvInfo,
        policy_versions_tensor: Tensor | PolicyID | None = None,
        policy_id: PolicyID = 0,
        param_server: ParameterServer | None = None,
    ) -> None:
        if policy_versions_tensor is not None and not isinstance(policy_versions_tensor, Tensor):
            policy_versions_tensor, policy_id = None, _legacy_policy_id(policy_versions_tensor, policy_id)
        self.cfg = cfg
        self.env_info = env_info
        self.policy_id = policy_id
        self.publishing = LegacyPublishing(policy_id, policy_versions_tensor, param_server)
        self.recurrence = effective_recurrence(cfg)
        self._check_cfg()
        self.device = torch.device("cpu")
        self.channels_last = False  # conv weights and image batches in NHWC order (learner_fast_paths)
        self.actor_critic: ActorCritic | None = None
        self.optimizer: torch.optim.Optimizer | None = None
        self.lr_schedule: LrSchedule = make_lr_schedule(cfg)
        self.train_step = 0
        self.policy_version = 0
        self.last_summary_time = 0.0
        self.timing = Timing("Learner")
        self.batch_timing = Timing("Learner batch preparation")
        # a distributed run's learners of this policy (set before init): SGD steps average their gradients
        self.ranks: RankGroup | None = None

    def _check_cfg(self) -> None:
        cfg, recurrence = self.cfg, self.recurrence
        for name in ("batch_size", "rollout"):
            if flag_value(cfg, name) % recurrence:
                raise ValueError(f"--{name}={flag_value(cfg, name)} must be a multiple of --recurrence={recurrence}")
        if cfg.with_vtrace and recurrence != cfg.rollout:
            raise ValueError(f"--with_vtrace=True needs --recurrence={recurrence} equal to --rollout={cfg.rollout}")

    def init(self) -> None:
        """Build the model on the policy's device (``gpu_utils.policy_device``), the optimiser and the lr schedule."""
        self.device = policy_device(self.cfg, self.policy_id)
        self.actor_critic = create_actor_critic(self.cfg, self.env_info.obs_space, self.env_info.action_space)
        self.actor_critic.model_to_device(self.device)
        # speed tricks on the model, each where it computes what the plain path does (one log line each)
        fast_paths = LearnerFastPaths(self.cfg, self.actor_critic, self.env_info.obs_space, self.device)
        self.channels_last = trains_faster_channels_last(self.actor_critic, self.device) and fast_paths.channels_last()
        if self.channels_last:  # before the optimiser is made: its moment buffers take the parameters' layout
            self.actor_critic.to(memory_format=torch.channels_last)
        self.actor_critic.train()
        params = list(self.actor_critic.parameters())
        self.optimizer = make_optimizer(self.cfg, params)
        flat, watch_gradients = fast_paths.flat_adam(self.optimizer)
        self._ppo_loss = ppo_loss if fast_paths.fused_loss() else ppo_loss_autograd
        use_gru_bptt(self.actor_critic, self.device)
        if self.ranks is None:
            self._sgd_step = SgdStep(self.optimizer, params, flat=flat, watch_gradients=watch_gradients)
            self.lr_schedule = make_lr_schedule(self.cfg)
        else:
            self._sgd_step = AveragedSgdStep(self.optimizer, params, self.ranks, self.timing, flat)
            reduce_kl = kl_mean_over_ranks(self.ranks)
            self.lr_schedule = make_lr_schedule(self.cfg, self.ranks.world_size, reduce_kl=reduce_kl)
        self.publishing.start(self.actor_critic, self.policy_version, self.device)

    @property
    def policy_versions_tensor(self) -> Tensor | None:
        """Sample Factory 2's shared table of policy versions, when the constructor was given one."""
        return self.publishing.versions

    @property
    def param_server(self) -> ParameterServer | None:
        """Sample Factory 2's parameter server, when the constructor was given one."""
        return self.publishing.param_server

    @property
    def lr(self) -> float:
        return self.lr_schedule.lr

    # ---- batch preparation (main thread) ------------------------------------------------------------------------

    def prepare_batch(self, trajectories: TensorDict) -> TensorDict:
        """Flat training samples ``[N*T]`` from N trajectories of length T (``trajectories`` is not modified).

        Output keys: ``obs`` (normalised), ``rnn_states``, ``actions``, ``log_prob_actions``, ``action_logits``,
        ``values`` (behaviour values, returns-normaliser space), ``returns`` (value targets, same space),
        ``advantages`` (GAE, reward units), ``rewards`` (shaped), ``dones``, ``valids``, ``discarded`` (stale),
        ``policy_version``, ``bootstrap_values`` (value after the trajectory's last step, as the model output it: in
        returns-normaliser space, so V-trace can interpret it with the same statistics as the current values).
        """
        with self.batch_timing.add_time("prepare_batch"):
            with self.batch_timing.add_time("to_device"):
                traj = trajectories.to(self.device)
            with torch.no_grad():
                return self._prepare_on_device(traj)

    def _prepare_on_device(self, traj: TensorDict) -> TensorDict:
        cfg, ac, timing = self.cfg, self.actor_critic, self.batch_timing
        num_steps = traj["rewards"].shape[1]
        valids, discarded, _ = discard_stale(
            traj["valids"].bool(), traj["policy_version"], self.policy_version, cfg.max_policy_lag
        )  # [N, T]
        rewards = shape_rewards(traj["rewards"].float(), cfg.reward_scale, cfg.reward_clip)  # [N, T]
        with timing.add_time("normalize_obs"):
            flat_obs = {key: flatten_steps(x, num_steps) for key, x in traj["obs"].items()}  # [N*T, ...]
            obs = normalize_observations(ac, flat_obs, valids.flatten())
            # after normalising (per-pixel statistics reduce fastest in NCHW); minibatches slice N and keep NHWC
            if self.channels_last:
                obs = {key: as_channels_last(x) for key, x in obs.items()}
        with timing.add_time("bootstrap_values"):
            last_obs = {key: x[:, num_steps] for key, x in traj["obs"].items()}  # [N, ...]
            bootstrap_output = predict_values(ac, last_obs, traj["rnn_states"][:, num_steps])  # [N]
            bootstrap = apply_returns_normalizer(ac, bootstrap_output, denormalize=True)  # reward units
        values = apply_returns_normalizer(ac, traj["values"].float(), denormalize=True)  # [N, T] reward units
        if cfg.value_bootstrap:
            rewards = bootstrap_time_outs(rewards, traj["time_outs"].float(), values, cfg.gamma)
        with timing.add_time("gae"):
            advantages, returns = self._gae(rewards, traj["dones"].float(), values, bootstrap, valids)
        returns, old_values = self._normalize_returns(returns, values, valids)

        def flat(x: Tensor) -> Tensor:
            return flatten_steps(x, num_steps)

        return TensorDict(
            obs=TensorDict(obs),
            rnn_states=flat(traj["rnn_states"]),
            actions=flat(traj["actions"]),
            log_prob_actions=flat(traj["log_prob_actions"]),
            action_logits=flat(traj["action_logits"]),
            values=flat(old_values),
            returns=flat(returns),
            advantages=flat(advantages),
            rewards=flat(rewards),
            dones=flat(traj["dones"].float()),
            valids=flat(valids),
            discarded=flat(discarded),
            policy_version=flat(traj["policy_version"]),
            bootstrap_values=bootstrap_output.repeat_interleave(num_steps),
        )

    def _gae(
        self, rewards: Tensor, dones: Tensor, values: Tensor, bootstrap: Tensor, valids: Tensor
    ) -> tuple[Tensor, Tensor]:
        """GAE advantages and returns ``A + V`` ([N, T], reward units).

        Also computed with V-trace, where they only feed the returns normaliser's statistics (V-trace targets are
        recomputed per minibatch).
        """
        values_ext = torch.cat([values, bootstrap.unsqueeze(1)], dim=1)  # [N, T+1]
        valids_ext = torch.cat([valids, torch.ones_like(valids[:, :1])], dim=1)  # [N, T+1]
        advantages = gae_advantages(rewards, dones, values_ext, valids_ext, self.cfg.gamma, self.cfg.gae_lambda)
        return advantages, advantages + values

    def _normalize_returns(self, returns: Tensor, values: Tensor, valids: Tensor) -> tuple[Tensor, Tensor]:
        """Update the returns statistics from the valid returns, then map returns and old values into that space.

        The behaviour values were produced under older statistics; re-normalising them with the new ones keeps
        the value clipping comparing like with like.
        """
        if self.actor_critic.returns_normalizer is None:
            return returns, values
        apply_returns_normalizer(self.actor_critic, returns[valids], denormalize=False, update=True)
        normalized_returns = apply_returns_normalizer(self.actor_critic, returns, denormalize=False)
        return normalized_returns, apply_returns_normalizer(self.actor_critic, values, denormalize=False)

    # ---- SGD (training thread) ----------------------------------------------------------------------------------

    def train(self, batch: TensorDict) -> dict[str, float] | None:
        """Run all epochs of SGD on a prepared batch; the stats of the last epoch, or None if nothing is valid."""
        with self.timing.add_time("train"):
            if not bool(batch["valids"].any()):
                log.warning("Policy %d: every sample of the batch is invalid or stale, skipping it", self.policy_id)
                return None
            version_at_start = self.policy_version
            num_sgd_steps = 0
            # consecutive minibatches are the same in every epoch: sliced and weighed once
            fixed = None if self.cfg.shuffle_minibatches else self._minibatches(batch)
            for epoch in range(self.cfg.num_epochs):
                epoch_stats: list[dict[str, Tensor]] = []
                reported: list[ReportedSamples] = []
                last_epoch = epoch == self.cfg.num_epochs - 1  # only its stats are reported
                minibatches = fixed if fixed is not None else self._minibatches(batch)
                for mb in minibatches:
                    stats, samples = self._train_minibatch(mb, full_stats=last_epoch)
                    self.lr_schedule.after_minibatch(stats["kl_divergence"] if self.lr_schedule.needs_kl else None)
                    epoch_stats.append(stats)
                    if samples is not None:
                        reported.append(samples)
                    num_sgd_steps += 1
                self.lr_schedule.after_epoch()
            self.train_step += 1
            with self.timing.add_time("stats"):
                columns = {key: torch.stack([stats[key] for stats in epoch_stats]) for key in epoch_stats[0]}
                columns.update(reported_stats(reported, [mb.valid_mean for mb in minibatches], self.cfg.ppo_clip_ratio))
                summary = summarize(columns, batch, version_at_start)
                summary.update(
                    lr=self.lr_schedule.lr, num_sgd_steps=num_sgd_steps, train_step=self.train_step,
                    policy_version=self.policy_version,
                )  # fmt: skip
        if self.publishing.active:
            with self.timing.add_time("publish_weights"):
                self.publishing.publish(self.policy_version)
        return summary

    def _minibatches(self, batch: TensorDict) -> list[Minibatch]:
        return epoch_minibatches(batch, self.cfg, self.recurrence, self.device)

    def _train_minibatch(
        self, minibatch: Minibatch, full_stats: bool = True
    ) -> tuple[dict[str, Tensor], ReportedSamples | None]:
        """One SGD step: its scalar stats and, with ``full_stats``, the per-sample values the reported stats average.

        ``full_stats=False`` computes only the stats the step itself needs (the KL, when the loss or the learning-rate
        schedule uses it): the others are reported for the last epoch only, and on small networks their two dozen
        extra tensor operations per minibatch are a measurable share of the learner's time."""
        mb = minibatch.data
        outputs = self._evaluate_policy(mb)
        advantages, targets = self._advantages_and_targets(mb, outputs)
        with self.timing.add_time("losses"):
            losses, stats, samples = self._losses(minibatch, outputs, advantages, targets, full_stats)
        with self.timing.add_time("update"):
            stats["grad_norm"] = self._optimizer_step(losses)
        return stats, samples

    def _evaluate_policy(self, mb: TensorDict) -> PolicyOutputs:
        """Current policy on a minibatch: encoder on all samples, exact BPTT over segments, then the heads."""
        ac = self.actor_critic
        with self.timing.add_time("forward_head"):
            head_output = ac.forward_head(mb["obs"])  # [B, F]
        with self.timing.add_time("bptt"):
            core_output = core_forward_bptt(ac, head_output, mb["rnn_states"], mb["dones"], self.recurrence)
        with self.timing.add_time("tail"):
            action_mask = mb["obs"].get(ACTION_MASK_KEY)
            tail = ac.forward_tail(core_output, values_only=False, sample_actions=False, action_mask=action_mask)
            distribution = ac.action_distribution()
            log_probs = distribution.log_prob(mb["actions"])  # [B]
        return PolicyOutputs(tail["values"], log_probs, distribution)

    def _advantages_and_targets(self, mb: TensorDict, outputs: PolicyOutputs) -> tuple[Tensor, Tensor]:
        """Advantages (reward units) and value targets (returns-normaliser space), each [B]."""
        if not self.cfg.with_vtrace:
            return mb["advantages"], mb["returns"]
        with self.timing.add_time("vtrace"):
            return self._vtrace_targets(mb, outputs.values.detach(), outputs.log_probs.detach())

    def _vtrace_targets(self, mb: TensorDict, values: Tensor, log_probs: Tensor) -> tuple[Tensor, Tensor]:
        """V-trace on the minibatch's whole trajectories with the current values and importance ratios."""
        num_steps = self.cfg.rollout  # == recurrence, so minibatches hold whole trajectories
        shape = (-1, num_steps)
        ratios = torch.exp(log_probs - mb["log_prob_actions"]).view(shape)  # [n, T], truncated inside vtrace()
        values_ext = torch.cat([values.view(shape), mb["bootstrap_values"].view(shape)[:, -1:]], dim=1)  # [n, T+1]
        values_ext = apply_returns_normalizer(self.actor_critic, values_ext, denormalize=True)  # reward units
        valids = mb["valids"].view(shape)
        valids_ext = torch.cat([valids, torch.ones_like(valids[:, :1])], dim=1)  # [n, T+1]
        cfg = self.cfg
        vs, pg_advantages = vtrace(
            ratios, mb["rewards"].view(shape), mb["dones"].view(shape), values_ext, valids_ext, cfg.gamma,
            cfg.vtrace_rho, cfg.vtrace_c,
        )  # fmt: skip
        targets = apply_returns_normalizer(self.actor_critic, vs.flatten(), denormalize=False)
        return pg_advantages.flatten(), targets

    def _losses(
        self, minibatch: Minibatch, outputs: PolicyOutputs, advantages: Tensor, targets: Tensor, full_stats: bool = True
    ) -> tuple[Tensor, dict[str, Tensor], ReportedSamples | None]:
        """Total loss, detached scalar stats and (``full_stats``) the per-sample values of the reported stats.

        The weighted terms are added per sample and averaged over the valid samples once. The reported loss terms
        include their coefficients. Stats that are not needed by the step itself are collected without autograd and
        only with ``full_stats``; ``kl_divergence`` is also computed when the KL term is in the loss or the adaptive
        learning-rate schedule reads it. The advantages standardised over the valid samples come with the minibatch
        (GAE: computed for the whole epoch) or are computed here (V-trace: they depend on the current policy)."""
        cfg, mb, valid_mean = self.cfg, minibatch.data, minibatch.valid_mean
        std_advantages = minibatch.std_advantages
        if std_advantages is None:
            std_advantages = normalize_advantages(advantages, valid_mean)
        explore_terms = None
        if cfg.exploration_loss_coeff != 0.0:
            explore_terms = cfg.exploration_loss_coeff * exploration_terms(outputs.distribution, cfg.exploration_loss)
        inputs = PPOLossInputs(
            mb["log_prob_actions"], std_advantages, mb["values"], targets, valid_mean, cfg.ppo_clip_ratio,
            cfg.ppo_clip_value, cfg.value_loss_coeff,
        )  # fmt: skip
        loss, policy_terms, value_terms, ratios = self._ppo_loss(
            outputs.log_probs, outputs.values, explore_terms, inputs
        )
        stats: dict[str, Tensor] = {}
        if full_stats or cfg.kl_loss_coeff != 0.0 or self.lr_schedule.needs_kl:
            kl_divergence = self._kl_divergence(mb, outputs.distribution, valid_mean, cfg.kl_loss_coeff != 0.0)
            if cfg.kl_loss_coeff != 0.0:
                loss = loss + cfg.kl_loss_coeff * kl_divergence
            stats["kl_divergence"] = kl_divergence.detach()
        if not full_stats:
            return loss, stats, None
        stats["loss"] = loss.detach()
        stats["kl_loss"] = cfg.kl_loss_coeff * stats["kl_divergence"]
        with torch.no_grad():
            samples = ReportedSamples(
                policy_terms, value_terms, None if explore_terms is None else explore_terms.detach(),
                outputs.distribution.entropy(), outputs.values.detach(), advantages, ratios,
            )  # fmt: skip
        return loss, stats, samples

    def _kl_divergence(
        self, mb: TensorDict, distribution: ActionDistribution, valid_mean: ValidMean, with_grad: bool
    ) -> Tensor:
        """Mean KL(current policy || behaviour policy) over the valid samples of the minibatch.

        This direction is the one Sample Factory 2 penalises (with ``--kl_loss_coeff=10`` on HalfCheetah its runs'
        entropy follows this direction's, not the other's). It matters for Gaussian policies: the other direction
        grows with the behaviour spread over the current one, so when the means move it also pushes the current
        standard deviations up, and the action noise of a run decays more slowly.
        """
        cfg, space = self.cfg, self.env_info.action_space
        action_mask = mb["obs"].get(ACTION_MASK_KEY)
        with torch.set_grad_enabled(with_grad and torch.is_grad_enabled()):
            # an autoregressive head stored its conditionals along the taken prefix: this is their factorized product
            old = get_action_distribution(
                space, mb["action_logits"], action_mask, cfg.continuous_tanh_scale, cfg.action_distribution
            )
            return valid_mean(distribution.kl_divergence(old))

    def _optimizer_step(self, loss: Tensor) -> Tensor:
        """Backward, gradient clipping (``--max_grad_norm``, off when <= 0), one optimiser step at the schedule's lr;
        the grad norm (``optimizers.SgdStep``: flat tensors or lean per-tensor steps, bookkeeping kept minimal)."""
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr_schedule.lr
        grad_norm = self._sgd_step(loss, self.cfg.max_grad_norm if self.cfg.max_grad_norm > 0 else float("inf"))
        self.policy_version += 1
        return grad_norm

    # ---- checkpoints --------------------------------------------------------------------------------------------

    def get_checkpoint_state(self) -> dict:
        """Model (with normalisers), optimiser, counters and lr: plain tensors/dicts/numbers, ``weights_only``-safe.

        Tensors are references to the live ones: save before the next training step changes them.
        """
        return {
            "model": self.actor_critic.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "train_step": self.train_step,
            "policy_version": self.policy_version,
            "lr_schedule": self.lr_schedule.state_dict(),
        }

    def load_checkpoint_state(self, state: dict) -> None:
        """Restore what ``get_checkpoint_state`` returned (after ``init``), or a Sample Factory 2 checkpoint's state:
        it has no ``policy_version`` (its policy version is its train step) and keeps the rate as ``curr_lr``."""
        self.actor_critic.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.train_step = int(state["train_step"])
        self.policy_version = int(state.get("policy_version", self.train_step))
        if "lr_schedule" in state:
            self.lr_schedule.load_state_dict(state["lr_schedule"])
        elif "curr_lr" in state:
            self.lr_schedule.load_state_dict({"lr": float(state["curr_lr"])})
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr_schedule.lr
        self.publishing.publish(self.policy_version)

    # ---- population-based training --------------------------------------------------------------------------------

    def set_hyperparameters(self, params: dict[str, float]) -> None:
        """New values for hyper-parameters the learner reads at every step (PBT); they apply from the next step.

        The loss coefficients, clip ranges, ``max_grad_norm`` and ``gamma`` are read from ``self.cfg`` each time
        they are used (give each learner its own ``cfg`` copy when several share a process); the learning rate
        also resets the schedule's current value, which an adaptive schedule then moves on from (``linear_decay``
        takes it as the new starting rate of its line, at the progress already made).
        """
        for name, value in params.items():
            if not hasattr(self.cfg, name):
                raise KeyError(f"{name} is not a parameter of this run's config")
            setattr(self.cfg, name, value)
        if "learning_rate" in params:
            self.lr_schedule.set_learning_rate(float(params["learning_rate"]))
            for group in self.optimizer.param_groups:
                group["lr"] = self.lr_schedule.lr

    def load_donor_state(self, state: dict, version_jump: int) -> None:
        """Take over another policy's model (normalisers included) and optimiser state (PBT replacement).

        The policy version moves forward by ``version_jump``: with ``--max_policy_lag + 1`` every trajectory still
        in flight from the replaced weights counts as stale and is discarded instead of being trained on as if
        the new weights had produced it. Counters of this learner (train step) are its own and are kept.
        """
        self.actor_critic.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        for group in self.optimizer.param_groups:
            group["lr"] = self.lr_schedule.lr
        self.policy_version += version_jump
        self.publishing.publish(self.policy_version)


def _legacy_policy_id(policy_id: object, keyword_policy_id: PolicyID) -> PolicyID:
    """``Learner(cfg, env_info, policy_id)``: the third argument given as an int, the form our runners used."""
    if isinstance(policy_id, bool) or not isinstance(policy_id, int):
        raise TypeError(
            f"Learner's third argument is policy_versions_tensor (a tensor with one version per policy) or, in the "
            f"older form, the policy id (an int): got {type(policy_id).__name__}"
        )
    if keyword_policy_id not in (0, policy_id):
        raise TypeError(
            f"Learner got policy id {policy_id} in third place and policy_id={keyword_policy_id}: pass it once"
        )
    return policy_id
