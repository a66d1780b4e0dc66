"""Autoregressive policy head for Tuple and MultiDiscrete actions (``--action_head=autoregressive``).

The factorized head draws every sub-action independently given the state, ``p(a | s) = prod_k p_k(a_k | s)``, so it
cannot express "the second choice must match the first". This head uses the chain rule instead,
``p(a | s) = prod_k p_k(a_k | s, a_<k)``: the logits of sub-action ``k`` come from the actor's features plus a learned
embedding of the sub-actions before it (one-hot for discrete ones, the values for Box ones), through the model's
nonlinearity. Sampling draws the sub-actions one after the other; scoring given actions (the learner) computes every
conditional at once from the given prefix (teacher forcing).

What the trajectory buffers store as ``action_logits``: the logits of every sub-action *given the prefix that was
sampled*, in the tuple layout (``calc_num_action_parameters(space)`` numbers). Read back as the factorized tuple
distribution of the space (``get_action_distribution(space, stored_logits)``, what the learner does), they give the
behaviour policy's exact log-probability of the taken action and its conditionals along the taken prefix. The
learner re-evaluates the current policy on that same prefix, so the PPO/V-trace ratio is exact and the KL it reports,
``sum_k KL(old_k || new_k)`` along the taken prefix, is by the chain rule an unbiased estimate of the KL of the joint
distributions (the prefix was drawn from the old policy). The entropy is estimated the same way, as the sum of the
conditional entropies along a prefix.

Which prefix a distribution is conditioned on: the most likely one when it is made (``argmax()``, and the
``action_logits`` of a pass that samples nothing), then the last one it sampled or scored.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
import torch
from torch import Tensor, nn
from torch.nn import functional as F

from sample_factory.envs.spaces.layout import autoregressive_sub_spaces
from sample_factory.model.action_distributions import (
    ActionDistribution,
    TupleActionDistribution,
    calc_num_action_parameters,
    calc_num_actions,
    get_action_distribution,
    split_action_mask,
)
from sample_factory.model.model_utils import nonlinearity
from sample_factory.utils.typing import ActionSpace, Config


def _prefix_width(space: gym.Space) -> int:
    """How many inputs one sub-action gives the heads after it: a one-hot for Discrete, the values for Box."""
    return int(space.n) if isinstance(space, gym.spaces.Discrete) else calc_num_actions(space)


class ActionParameterizationAutoregressive(nn.Module):
    """``forward(actor_output, action_mask=None) -> (action_logits, AutoregressiveActionDistribution)``.

    Sub-action 0 gets a linear layer over the actor's features; sub-action ``k > 0`` a linear layer over
    ``nonlinearity(features + embedding_k(a_<k))``, where ``embedding_k`` is a linear map of the earlier sub-actions'
    one-hots and values to the feature width (a sum, not a concatenation: the features keep their meaning).
    """

    def __init__(self, cfg: Config, core_out_size: int, action_space: ActionSpace) -> None:
        super().__init__()
        self.cfg = cfg
        self.action_space = action_space
        self.sub_spaces = autoregressive_sub_spaces(action_space)
        widths = [_prefix_width(space) for space in self.sub_spaces]
        params = [calc_num_action_parameters(space) for space in self.sub_spaces]
        self.first = nn.Linear(core_out_size, params[0])
        self.embeddings = nn.ModuleList(
            nn.Linear(sum(widths[:k]), core_out_size, bias=False) for k in range(1, len(self.sub_spaces))
        )
        self.heads = nn.ModuleList(nn.Linear(core_out_size, params[k]) for k in range(1, len(self.sub_spaces)))
        self.activation = nonlinearity(cfg)

    def sub_action_logits(self, k: int, features: Tensor, prefix: list[Tensor]) -> Tensor:
        """Raw parameters of sub-action ``k`` ([B, params_k]) given ``features`` [B, F] and the inputs of the
        sub-actions before it (``prefix[:k]``, each [B, width])."""
        if k == 0:
            return self.first(features)
        embedding = self.embeddings[k - 1](torch.cat(prefix[:k], dim=1))  # [B, F]
        return self.heads[k - 1](self.activation(features + embedding))

    def forward(self, actor_output: Tensor, action_mask: Tensor | None = None) -> tuple[Tensor, ActionDistribution]:
        distribution = AutoregressiveActionDistribution(self, actor_output, action_mask)
        return distribution.conditional_logits, distribution


class AutoregressiveActionDistribution(TupleActionDistribution):
    """The chain-rule distribution of :class:`ActionParameterizationAutoregressive` over one batch of features.

    ``components`` are the conditional distributions of the sub-actions along the prefix it was last conditioned on
    and ``conditional_logits`` ([B, num_params]) their raw parameters; ``entropy``, ``kl_divergence`` and
    ``symmetric_kl_with_uniform_prior`` (inherited) are sums over them (see the module docstring).
    """

    def __init__(self, head: ActionParameterizationAutoregressive, features: Tensor, action_mask: Tensor | None):
        self.head = head
        self.features = features  # [B, F]
        self.sub_spaces = head.sub_spaces
        self.num_actions = [calc_num_actions(space) for space in self.sub_spaces]
        self.is_discrete = all(isinstance(space, gym.spaces.Discrete) for space in self.sub_spaces)
        self.action_dtype = torch.int64 if self.is_discrete else torch.float32
        self.masks = split_action_mask(self.sub_spaces, action_mask, features.shape[0])
        self.tanh_scale = head.cfg.continuous_tanh_scale
        self.components: list[ActionDistribution] = []
        self.conditional_logits: Tensor | None = None
        self._greedy = self._decode(lambda _, component: component.argmax())

    def _prefix_input(self, k: int, action: Tensor) -> Tensor:
        """[B, width_k] input that sub-action ``k``'s value gives the later heads (actions are data: no gradient)."""
        space, batch = self.sub_spaces[k], self.features.shape[0]
        action = action.detach()
        if isinstance(space, gym.spaces.Discrete):
            return F.one_hot(action.reshape(batch).long(), int(space.n)).to(self.features.dtype)
        return action.reshape(batch, -1).to(self.features.dtype)

    def _decode(self, choose: Callable[[int, ActionDistribution], Tensor]) -> list[Tensor]:
        """Condition on the prefix that ``choose(k, component_k)`` picks sub-action by sub-action; returns it."""
        components, logits, chosen, prefix = [], [], [], []
        for k, space in enumerate(self.sub_spaces):
            raw = self.head.sub_action_logits(k, self.features, prefix)
            component = get_action_distribution(space, raw, self.masks[k], self.tanh_scale)
            action = choose(k, component)
            components.append(component)
            logits.append(raw)
            chosen.append(action)
            prefix.append(self._prefix_input(k, action))
        self.components = components
        self.conditional_logits = torch.cat(logits, dim=1)
        return chosen

    def sample(self) -> Tensor:
        """[B, num_actions] drawn sub-action after sub-action."""
        return self._join(self._decode(lambda _, component: component.sample()))

    def log_prob(self, actions: Tensor) -> Tensor:
        """[B] log-probability of ``actions`` [B, num_actions], every head conditioned on their prefix."""
        parts = self._split(actions)
        self._decode(lambda k, _: parts[k])
        return sum(c.log_prob(a) for c, a in zip(self.components, parts, strict=True))

    def sample_actions_log_probs(self) -> tuple[Tensor, Tensor]:
        """Sampled actions [B, num_actions] and their log-probabilities [B], from one sequential pass."""
        sampled = self._decode(lambda _, component: component.sample().detach())
        log_probs = sum(c.log_prob(a) for c, a in zip(self.components, sampled, strict=True))
        return self._join(sampled), log_probs

    def argmax(self) -> Tensor:
        """[B, num_actions] the most likely sub-action after sub-action (greedy decoding)."""
        return self._join(self._greedy)
