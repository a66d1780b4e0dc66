"""Policy heads: map the actor's decoder output to raw action-distribution parameters.

The raw parameters (``action_logits``) are what the samplers store and what the learner turns back into a
distribution, so every head emits exactly ``calc_num_action_parameters(action_space, --action_distribution)`` numbers
per sample in the layout ``get_action_distribution`` expects (for Box spaces: means, then log standard deviations).
``--action_head`` picks the factorized heads here or the autoregressive one (``autoregressive_head``).
"""

from __future__ import annotations

import math

import gymnasium as gym
import torch
from torch import Tensor, nn

from sample_factory.model.action_distributions import (
    ActionDistribution,
    calc_num_action_parameters,
    calc_num_actions,
    get_action_distribution,
)
from sample_factory.model.autoregressive_head import ActionParameterizationAutoregressive
from sample_factory.utils.typing import ActionSpace, Config


class ActionParameterizationBase(nn.Module):
    """``forward(actor_output, action_mask=None) -> (action_logits [B, num_params], distribution)``."""

    def __init__(self, cfg: Config, action_space: ActionSpace) -> None:
        super().__init__()
        self.cfg = cfg
        self.action_space = action_space

    def _distribution(self, raw_params: Tensor, action_mask: Tensor | None) -> ActionDistribution:
        cfg = self.cfg
        return get_action_distribution(
            self.action_space, raw_params, action_mask, cfg.continuous_tanh_scale, cfg.action_distribution
        )


class ActionParameterizationDefault(ActionParameterizationBase):
    """One linear layer to all distribution parameters.

    For Box spaces the log-stds then depend on the state (``--adaptive_stddev=True``), which lets the policy be
    confident in some states and explore in others.
    """

    def __init__(self, cfg: Config, core_out_size: int, action_space: ActionSpace) -> None:
        super().__init__(cfg, action_space)
        num_parameters = calc_num_action_parameters(action_space, cfg.action_distribution)
        self.distribution_linear = nn.Linear(core_out_size, num_parameters)

    def forward(self, actor_output: Tensor, action_mask: Tensor | None = None) -> tuple[Tensor, ActionDistribution]:
        action_logits = self.distribution_linear(actor_output)  # [B, num_params]
        return action_logits, self._distribution(action_logits, action_mask)


class ActionParameterizationContinuousNonAdaptiveStddev(ActionParameterizationBase):
    """Gaussian head whose log-stds are one learned vector shared by all states (``--adaptive_stddev=False``).

    The vector starts at ``log(--initial_stddev)``: a state-independent std is harder to collapse prematurely, and
    the starting value sets the initial amount of exploration.
    """

    def __init__(self, cfg: Config, core_out_size: int, action_space: gym.spaces.Box) -> None:
        super().__init__(cfg, action_space)
        if not isinstance(action_space, gym.spaces.Box):
            raise TypeError(f"--adaptive_stddev=False needs a Box action space, got {action_space}")
        num_actions = calc_num_actions(action_space)
        self.distribution_linear = nn.Linear(core_out_size, num_actions)
        self.learned_stddev = nn.Parameter(torch.full((num_actions,), math.log(cfg.initial_stddev)))

    def forward(self, actor_output: Tensor, action_mask: Tensor | None = None) -> tuple[Tensor, ActionDistribution]:
        means = self.distribution_linear(actor_output)  # [B, d]
        log_stds = self.learned_stddev.expand_as(means)  # [B, d], gradients flow to the shared vector
        action_logits = torch.cat([means, log_stds], dim=1)  # [B, 2*d]
        return action_logits, self._distribution(action_logits, action_mask)


# ``ActionsParameterization``: Sample Factory 2's name of the base class of every head; the other spelling of the
# non-adaptive head stays importable for code that uses it
ActionsParameterization = ActionParameterizationBase
ActionsParameterizationContinuousNonAdaptiveStddev = ActionParameterizationContinuousNonAdaptiveStddev


def make_action_parameterization(
    cfg: Config, core_out_size: int, action_space: ActionSpace
) -> ActionParameterizationBase | ActionParameterizationAutoregressive:
    """The autoregressive head with ``--action_head=autoregressive``; otherwise the non-adaptive Gaussian head for
    Box spaces when ``--adaptive_stddev=False``, else the default head."""
    if cfg.action_head == "autoregressive":
        return ActionParameterizationAutoregressive(cfg, core_out_size, action_space)
    if isinstance(action_space, gym.spaces.Box) and not cfg.adaptive_stddev:
        return ActionParameterizationContinuousNonAdaptiveStddev(cfg, core_out_size, action_space)
    return ActionParameterizationDefault(cfg, core_out_size, action_space)
