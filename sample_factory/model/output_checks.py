"""Finiteness of a policy's action distribution parameters, checked by the inference worker on every batch.

NaN or inf logits (or Gaussian means/stddevs) come from a custom encoder, core or decoder that returns them, or from
weights that diverged. Unchecked, a discrete policy silently samples arbitrary actions from NaN probabilities and a
continuous one sends NaN actions to the env. The check is
one sum over the batch's ``[B, num_action_parameters]`` outputs, already on the CPU.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from sample_factory.envs.contract_errors import PolicyOutputError


def policy_output_error(model: nn.Module, logits: Tensor, policy_id: int, version: int) -> PolicyOutputError:
    bad = (~torch.isfinite(logits)).nonzero()
    value = logits[tuple(bad[0])].item() if len(bad) else float("nan")
    return PolicyOutputError(
        f"policy {policy_id}'s model ({type(model).__name__}) produced non-finite action distribution parameters "
        f"({value} in {len(bad)} of {logits.numel()} values, weights version {version}). A custom encoder, core or "
        "decoder must return finite values; if the built-in model diverged during training, lower --learning_rate, "
        "keep --max_grad_norm > 0, and scale rewards (--reward_scale) or observations (--normalize_input=True)"
    )


def check_action_parameters(model: nn.Module, logits: Tensor, policy_id: int, version: int) -> None:
    """Raise :class:`PolicyOutputError` when ``logits`` (``[B, num_action_parameters]``) hold NaN or inf.

    A NaN or an inf makes the sum non-finite, so one reduction clears the common case (1.7 us against 6.1 us for
    ``isfinite(...).all()`` on a CartPole batch); only a non-finite sum, which finite values can also give by
    overflowing, is looked at value by value.
    """
    if math.isfinite(float(logits.sum())):
        return
    if not bool(torch.isfinite(logits).all()):
        raise policy_output_error(model, logits, policy_id, version)


@torch.no_grad()
def explain_failed_forward(
    model: nn.Module, normalized_obs: dict, rnn_states: Tensor, action_mask: Tensor | None, policy_id: int, version: int
) -> PolicyOutputError | None:
    """The forward pass raised: a :class:`PolicyOutputError` when non-finite outputs were the cause, else None.

    Runs the model again without sampling actions (sampling may be what failed on NaN parameters); only on this
    failure path, so it costs nothing while the outputs are finite.
    """
    try:
        head = model.forward_head(normalized_obs)
        core, _ = model.forward_core(head, rnn_states)
        logits = model.forward_tail(core, values_only=False, sample_actions=False, action_mask=action_mask)
        logits = logits["action_logits"]
    except Exception:  # noqa: BLE001  (the model fails even without sampling: the original error says more)
        return None
    if bool(torch.isfinite(logits).all()):
        return None
    return policy_output_error(model, logits, policy_id, version)
