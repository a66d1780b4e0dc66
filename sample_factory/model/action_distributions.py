"""Action distributions built from the raw outputs of the policy head.

The policy head emits a flat vector of ``calc_num_action_parameters(action_space)`` numbers per sample; these
classes turn it into something to sample from and to score actions with. Layout of the raw parameters:

- ``Discrete(n)`` (and ``Discretized``): ``n`` unnormalised logits.
- ``Box`` with ``d`` elements: ``d`` means, then ``d`` log standard deviations.
- ``MultiDiscrete(nvec)``: the logits of each component concatenated, i.e. a tuple of categoricals.
- ``Tuple``: the parameters of each subspace concatenated in order (nesting allowed).

Every distribution samples ``[B, calc_num_actions(action_space)]``: ``[B, 1]`` int64 for ``Discrete``, ``[B, d]``
float32 for ``Box``, ``[B, k]`` for tuples (see ``TupleActionDistribution`` for its dtype rule). The trajectory
buffers and the model's ``actions`` output keep a ``Discrete`` action as one number per step, ``[B]``
(``buffer_actions``). ``log_prob`` takes either layout; it, ``entropy`` and ``kl_divergence`` return ``[B]``.

The classes are written directly against the formulas instead of wrapping ``torch.distributions`` to skip its
argument validation and broadcasting machinery, which is measurable on the inference hot path.

Distributions registered on the model factory (``register_action_distribution``: for a space type, or by name for
``--action_distribution``) take precedence over these classes wherever a distribution is built, and
``calc_num_action_parameters`` gives the width they declare.

Masks: an ``action_mask`` (nonzero = allowed) zeroes the probability of the actions it forbids, so they are never
sampled, the entropy and the KL cover only the allowed actions, and ``log_prob`` of a forbidden action is the most
negative finite float (a sampled action is always allowed, so the learner never meets one).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cached_property

import gymnasium as gym
import torch
from torch import Tensor
from torch.nn import functional as F

from sample_factory.envs.spaces.layout import (  # the space arithmetic, public here as in Sample Factory 2
    as_tuple_space,
    calc_num_actions,
    is_all_discrete,
    is_continuous_action_space,
    num_mask_entries,
    unsupported_action_space,
)
from sample_factory.envs.spaces.layout import calc_num_action_parameters as builtin_num_action_parameters
from sample_factory.model.model_factory import global_model_factory

__all__ = [
    "ActionDistribution",
    "CategoricalActionDistribution",
    "ContinuousActionDistribution",
    "TupleActionDistribution",
    "actions_in_buffer_layout",
    "argmax_actions",
    "buffer_actions",
    "calc_num_action_parameters",
    "calc_num_actions",
    "get_action_distribution",
    "is_all_discrete",
    "is_continuous_action_space",
    "masked_log_softmax",
    "masked_logits",
    "masked_softmax",
    "register_action_distribution",
    "sample_actions_log_probs",
    "sampled_action_logits",
]


def register_action_distribution(
    key: type[gym.Space] | str, make_distribution: Callable, num_parameters: Callable[[gym.Space], int] | None = None
) -> None:
    """``global_model_factory().register_action_distribution(...)``: see
    :meth:`~sample_factory.model.model_factory.ModelFactory.register_action_distribution`."""
    global_model_factory().register_action_distribution(key, make_distribution, num_parameters)


def calc_num_action_parameters(action_space: gym.Space, name: str | None = None) -> int:
    """Width of the raw policy output for ``action_space`` (the layout of the module docstring), or what a
    registered distribution declares: the one named ``name`` (``--action_distribution``), or the one registered for
    the space's type (for a tuple: the sum over its components)."""
    entry = global_model_factory().action_distribution_entry(action_space, name)
    if entry is not None:
        if entry.num_parameters is not None:
            return int(entry.num_parameters(action_space))
        return builtin_num_action_parameters(action_space)
    if isinstance(action_space, (gym.spaces.Tuple, gym.spaces.MultiDiscrete)):
        return sum(calc_num_action_parameters(space) for space in as_tuple_space(action_space).spaces)
    return builtin_num_action_parameters(action_space)


def get_action_distribution(
    action_space: gym.Space,
    raw_logits: Tensor,
    action_mask: Tensor | None = None,
    tanh_scale: float = 0.0,
    name: str | None = None,
) -> ActionDistribution:
    """The distribution over ``action_space`` parameterised by ``raw_logits`` ([B, num_action_parameters]).

    ``action_mask`` ([B, n], nonzero = allowed) applies to discrete choices; for tuples it is the concatenation
    of the masks of the discrete components in order (Box components take no entries). ``tanh_scale`` squashes
    Gaussian means into ``(-tanh_scale, tanh_scale)`` when positive (``--continuous_tanh_scale``). A distribution
    registered under ``name`` (``--action_distribution``), or for the space's type, is used instead of the built-in
    one (see ``register_action_distribution``).
    """
    entry = global_model_factory().action_distribution_entry(action_space, name)
    if entry is not None:
        return entry.make(action_space, raw_logits, action_mask)
    return builtin_action_distribution(action_space, raw_logits, action_mask, tanh_scale)


def builtin_action_distribution(
    action_space: gym.Space, raw_logits: Tensor, action_mask: Tensor | None = None, tanh_scale: float = 0.0
) -> ActionDistribution:
    """The library's own distribution for ``action_space`` (components of a tuple still go through the registry)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return CategoricalActionDistribution(raw_logits, action_mask)
    if isinstance(action_space, gym.spaces.Box):
        return ContinuousActionDistribution(raw_logits, tanh_scale)
    if isinstance(action_space, (gym.spaces.Tuple, gym.spaces.MultiDiscrete)):
        return TupleActionDistribution(as_tuple_space(action_space), raw_logits, action_mask, tanh_scale)
    raise unsupported_action_space(action_space)


def argmax_actions(distribution: ActionDistribution) -> Tensor:
    """The most likely action: argmax for categoricals ([B]), the mean for Gaussians, per component for tuples
    (sub-action after sub-action for an autoregressive head)."""
    argmax = getattr(distribution, "argmax", None)
    if argmax is None:
        raise TypeError(
            f"{type(distribution).__name__} has no argmax(): deterministic evaluation (--eval_deterministic=True) "
            "takes the most likely action, so a registered distribution must define argmax() -> actions"
        )
    return argmax()


def actions_in_buffer_layout(actions: Tensor, action_space: gym.Space) -> Tensor:
    """``actions`` of a batch as the buffers and the env-facing code hold them: ``[B]`` for Discrete, ``[B, k]``
    otherwise, whether the model gave ``[B]`` or Sample Factory 2's ``[B, 1]`` (a view, no copy)."""
    if isinstance(action_space, gym.spaces.Discrete):
        return actions.reshape(-1)
    return actions.reshape(actions.shape[0], -1)


def sampled_action_logits(distribution: ActionDistribution, action_logits: Tensor) -> Tensor:
    """The raw parameters stored with actions just sampled from ``distribution``: ``action_logits`` (the head's
    output), unless the distribution conditions on its own samples and exposes the parameters it sampled them from as
    ``conditional_logits`` (the autoregressive head: the logits of each sub-action given the sampled prefix)."""
    conditional = getattr(distribution, "conditional_logits", None)
    return action_logits if conditional is None else conditional


def buffer_actions(distribution: ActionDistribution, actions: Tensor) -> Tensor:
    """``actions`` sampled from ``distribution`` in the layout of the trajectory buffers: ``[B]`` for Discrete.

    Samples of a categorical are ``[B, 1]`` (one column per action number, like every other space); the buffers
    and the env-facing code hold one number per step, so the column is dropped (a view, no copy).
    """
    if isinstance(distribution, CategoricalActionDistribution):
        return actions.squeeze(-1)
    return actions


def masked_logits(logits: Tensor, mask: Tensor | None) -> Tensor:
    """``logits`` with the entries ``mask`` forbids (0) set to the most negative finite value of their dtype.

    Not ``-inf``: a forbidden action's probability is still exactly zero after a softmax, while ``0 * log(0)``
    terms (entropy, KL) stay finite instead of NaN. ``mask`` None forbids nothing (``logits`` is returned as is).
    """
    if mask is None:
        return logits
    return logits.masked_fill(mask == 0, torch.finfo(logits.dtype).min)


def masked_softmax(logits: Tensor, mask: Tensor | None) -> Tensor:
    """Probabilities over the last dimension of ``logits`` with the entries ``mask`` forbids (0) at exactly zero.

    The allowed entries sum to one; a row that allows nothing stays a uniform distribution, not NaN.
    """
    return F.softmax(masked_logits(logits, mask), dim=-1)


def masked_log_softmax(logits: Tensor, mask: Tensor | None) -> Tensor:
    """Log probabilities of :func:`masked_softmax`; a forbidden entry gets a huge negative but finite value."""
    return F.log_softmax(masked_logits(logits, mask), dim=-1)


class CategoricalActionDistribution:
    """Categorical distribution over ``n`` actions with optional masking of disallowed actions.

    Masked actions get the most negative finite logit of the dtype, not ``-inf``: their probability is exactly
    zero, so they are never sampled, while ``0 * log(0)`` terms in the entropy stay finite instead of NaN.
    """

    def __init__(self, raw_logits: Tensor, action_mask: Tensor | None = None):
        self.raw_logits = masked_logits(raw_logits, action_mask)  # [B, n]
        self.action_mask = action_mask

    @cached_property
    def log_probs(self) -> Tensor:
        """[B, n] normalised log probabilities."""
        return F.log_softmax(self.raw_logits, dim=-1)

    @cached_property
    def probs(self) -> Tensor:
        """[B, n] action probabilities."""
        return self.log_probs.exp()

    def sample(self) -> Tensor:
        """[B, 1] int64 sampled actions, drawn by an exponential race: ``argmax_i p_i / E_i`` with ``E_i ~ Exp(1)``.

        ``E_i / p_i ~ Exp(p_i)``, and the smallest of independent exponential times is ``i`` with probability
        ``p_i / sum_j p_j``: exactly the categorical law, as ``torch.multinomial`` draws it, at a third of its cost on
        the small batches of CPU inference (4.7 against 12.7 us for [8, 2] probabilities, one thread). A masked
        action has probability exactly 0 and can never win. NaN probabilities do not raise here: the inference
        worker checks the logits (``output_checks``).
        """
        probs = self.probs
        race = torch.empty_like(probs).exponential_().clamp_(min=torch.finfo(probs.dtype).tiny)  # no 0 / 0
        return (probs / race).argmax(dim=-1, keepdim=True)

    def sample_gumbel(self) -> Tensor:
        """[B, 1] int64 actions drawn with the Gumbel-max trick: ``argmax_i (log p_i + G_i)``, ``G_i ~ Gumbel(0, 1)``.

        The same law as ``sample()`` (``-log E`` of an exponential ``E`` is a standard Gumbel variable, so this is
        the log of the exponential race), kept for code that asks for it by name.
        """
        uniform = torch.rand_like(self.log_probs).clamp_(min=torch.finfo(self.log_probs.dtype).tiny)  # log(0)
        gumbel = -torch.log(-torch.log(uniform))
        return (self.log_probs + gumbel).argmax(dim=-1, keepdim=True)

    def log_prob(self, actions: Tensor) -> Tensor:
        """Log probabilities of ``actions`` (any numeric dtype): [B] for [B] or [B, 1] actions.

        ``[B, k]`` actions score ``k`` actions per row against that row's distribution and give ``[B, k]``.
        """
        actions = actions.long()
        if actions.dim() < self.log_probs.dim():
            actions = actions.unsqueeze(-1)  # [B] -> [B, 1]
        log_probs = self.log_probs.gather(-1, actions)
        return log_probs.squeeze(-1) if log_probs.shape[-1] == 1 else log_probs

    def sample_actions_log_probs(self) -> tuple[Tensor, Tensor]:
        """Sampled actions [B, 1] and their log probabilities [B] in one call."""
        actions = self.sample()
        return actions, self.log_prob(actions)

    def entropy(self) -> Tensor:
        """[B] entropy ``-sum p log p``."""
        return -(self.probs * self.log_probs).sum(dim=-1)

    def kl_divergence(self, other: CategoricalActionDistribution) -> Tensor:
        """[B] ``KL(self || other)``."""
        return (self.probs * (self.log_probs - other.log_probs)).sum(dim=-1)

    def symmetric_kl_with_uniform_prior(self) -> Tensor:
        """[B] ``KL(u || p) + KL(p || u)`` with ``u`` uniform over the allowed actions.

        An exploration regulariser that, unlike entropy, grows without bound as the policy becomes deterministic.
        Masked actions are left out of ``u``: penalising zero probability on an impossible action is meaningless.
        """
        if self.action_mask is None:
            allowed = torch.ones_like(self.log_probs)  # [B, n]
        else:
            allowed = (self.action_mask != 0).to(self.log_probs.dtype)  # [B, n]
        log_uniform = -torch.log(allowed.sum(dim=-1, keepdim=True))  # [B, 1]
        kl_prior_policy = (allowed * log_uniform.exp() * (log_uniform - self.log_probs)).sum(dim=-1)
        kl_policy_prior = (self.probs * (self.log_probs - log_uniform)).sum(dim=-1)
        return kl_prior_policy + kl_policy_prior

    def argmax(self) -> Tensor:
        """[B] int64 most likely actions."""
        return self.raw_logits.argmax(dim=-1)


class ContinuousActionDistribution:
    """Diagonal Gaussian whose raw parameters are means then log standard deviations (``[B, 2 * d]``).

    The log-std is clamped to ``[LOG_STD_MIN, LOG_STD_MAX]``: a collapsing std makes log-probabilities (and the
    PPO ratio) explode, a huge one makes samples meaningless.
    """

    LOG_STD_MIN = -5.0
    LOG_STD_MAX = 2.0

    def __init__(self, params: Tensor, tanh_scale: float = 0.0):
        means, log_stds = params.chunk(2, dim=-1)  # [B, d] each
        if tanh_scale > 0:
            means = torch.tanh(means / tanh_scale) * tanh_scale
        self.means = means
        self.log_stds = log_stds.clamp(self.LOG_STD_MIN, self.LOG_STD_MAX)
        self.stds = self.log_stds.exp()

    def sample(self) -> Tensor:
        """[B, d] sampled actions."""
        return self.means + self.stds * torch.randn_like(self.means)

    def log_prob(self, actions: Tensor) -> Tensor:
        """[B] log density of ``actions`` ([B, d]), summed over action dimensions."""
        actions = actions.reshape(self.means.shape)
        z = (actions - self.means) / self.stds
        log_density = -0.5 * z.square() - self.log_stds - 0.5 * math.log(2 * math.pi)  # [B, d]
        return log_density.sum(dim=-1)

    def sample_actions_log_probs(self) -> tuple[Tensor, Tensor]:
        """Sampled actions [B, d] and their log densities [B] in one call."""
        actions = self.sample()
        return actions, self.log_prob(actions)

    def entropy(self) -> Tensor:
        """[B] differential entropy, summed over action dimensions."""
        return (self.log_stds + 0.5 * (1.0 + math.log(2 * math.pi))).sum(dim=-1)

    def kl_divergence(self, other: ContinuousActionDistribution) -> Tensor:
        """[B] ``KL(self || other)`` between diagonal Gaussians."""
        variance_ratio = (self.stds / other.stds).square()
        mean_term = ((self.means - other.means) / other.stds).square()
        return 0.5 * (variance_ratio + mean_term - 1.0 - variance_ratio.log()).sum(dim=-1)

    def argmax(self) -> Tensor:
        """[B, d] the means (the mode of a Gaussian)."""
        return self.means


def split_action_mask(
    spaces: tuple[gym.Space, ...], action_mask: Tensor | None, batch_size: int
) -> list[Tensor | None]:
    """The mask of each component of a tuple space (None for Box components), from either accepted layout.

    - ``[B, sum of widths]``: the components' masks side by side (what an env's ``action_mask`` observation of
      shape ``(sum of widths,)`` becomes in a batch);
    - ``[k * B, n]``: the masks of the ``k`` masked components stacked along the batch dimension, component ``j`` in
      rows ``j * B .. (j + 1) * B``, possible when every masked component has ``n`` choices.
    """
    if action_mask is None:
        return [None] * len(spaces)
    widths = [num_mask_entries(space) for space in spaces]
    masked = [w for w in widths if w > 0]
    if tuple(action_mask.shape) == (batch_size, sum(widths)):
        parts = iter(action_mask.split(masked, dim=-1))
    elif len(set(masked)) == 1 and tuple(action_mask.shape) == (len(masked) * batch_size, masked[0]):
        parts = iter(action_mask.split(batch_size, dim=0))
    else:
        raise ValueError(
            f"action_mask of shape {tuple(action_mask.shape)} does not fit a tuple action space with mask widths "
            f"{widths} and batch size {batch_size}: give [batch, {sum(widths)}] (the components' masks side by "
            f"side) or, when the masked components have equal widths, [{len(masked)} * batch, width] (stacked)"
        )
    return [next(parts) if w > 0 else None for w in widths]


class TupleActionDistribution:
    """Independent product of the distributions of a ``Tuple`` (or ``MultiDiscrete``) space's components.

    Actions are stored as one ``[B, num_actions]`` tensor, the components' actions side by side (a Box component
    takes its size, a discrete one a single column). Its dtype is int64 when every component is discrete and
    float32 otherwise (discrete indices are then exact small floats, cast back to int64 when scored).
    """

    def __init__(
        self,
        action_space: gym.spaces.Tuple,
        logits_flat: Tensor,
        action_mask: Tensor | None = None,
        tanh_scale: float = 0.0,
    ):
        spaces = as_tuple_space(action_space).spaces
        self.num_actions = [calc_num_actions(space) for space in spaces]
        self.is_discrete = is_all_discrete(action_space)
        self.action_dtype = torch.int64 if self.is_discrete else torch.float32
        logits_per_component = logits_flat.split([calc_num_action_parameters(s) for s in spaces], dim=-1)
        masks_per_component = split_action_mask(spaces, action_mask, logits_flat.shape[0])
        self.components = [
            get_action_distribution(space, logits, mask, tanh_scale)
            for space, logits, mask in zip(spaces, logits_per_component, masks_per_component, strict=True)
        ]

    def _join(self, component_actions: list[Tensor]) -> Tensor:
        """[B, num_actions] from per-component actions ([B] or [B, d])."""
        columns = [a.reshape(a.shape[0], -1).to(self.action_dtype) for a in component_actions]
        return torch.cat(columns, dim=-1)

    def _split(self, actions: Tensor) -> list[Tensor]:
        """Per-component actions from a stored ``[B, num_actions]`` tensor."""
        parts = actions.reshape(actions.shape[0], -1).split(self.num_actions, dim=-1)
        return [part.squeeze(-1) if n == 1 else part for part, n in zip(parts, self.num_actions, strict=True)]

    def sample(self) -> Tensor:
        """[B, num_actions] sampled actions."""
        return self._join([component.sample() for component in self.components])

    def log_prob(self, actions: Tensor) -> Tensor:
        """[B] sum of the components' log probabilities of ``actions`` ([B, num_actions])."""
        parts = self._split(actions)
        return sum(c.log_prob(a) for c, a in zip(self.components, parts, strict=True))

    def sample_actions_log_probs(self) -> tuple[Tensor, Tensor]:
        """Sampled actions [B, num_actions] and their log probabilities [B] in one call."""
        samples = [component.sample_actions_log_probs() for component in self.components]
        actions = self._join([a for a, _ in samples])
        return actions, sum(log_prob for _, log_prob in samples)

    def entropy(self) -> Tensor:
        """[B] sum of the components' entropies (they are independent)."""
        return sum(component.entropy() for component in self.components)

    def kl_divergence(self, other: TupleActionDistribution) -> Tensor:
        """[B] sum of the component-wise KL divergences."""
        return sum(c.kl_divergence(o) for c, o in zip(self.components, other.components, strict=True))

    def symmetric_kl_with_uniform_prior(self) -> Tensor:
        """[B] sum over components; defined only when every component is discrete."""
        if not self.is_discrete:
            raise NotImplementedError("--exploration_loss=symmetric_kl needs discrete actions: use entropy instead")
        return sum(component.symmetric_kl_with_uniform_prior() for component in self.components)

    def argmax(self) -> Tensor:
        """[B, num_actions] most likely action of every component."""
        return self._join([component.argmax() for component in self.components])


ActionDistribution = CategoricalActionDistribution | ContinuousActionDistribution | TupleActionDistribution


def sample_actions_log_probs(distribution: ActionDistribution) -> tuple[Tensor, Tensor]:
    """Sampled actions and their log probabilities ([B]) from any of the distributions above, in one call.

    Actions are [B, calc_num_actions(space)]: [B, 1] int64 for ``Discrete``, [B, d] for ``Box``, [B, num_actions]
    for tuples (``buffer_actions`` gives the buffers' layout). One call instead of ``sample()`` then
    ``log_prob()`` lets tuple distributions score each component's sample before joining them (no cast to float and
    back).
    """
    return distribution.sample_actions_log_probs()
