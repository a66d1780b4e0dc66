"""Export a trained policy to ONNX: ``export_onnx(cfg, path) -> status``.

Built from Sample Factory 2's three pieces, usable on their own: ``create_onnx_exporter(cfg, env)`` loads the
policy and wraps it in an ``OnnxExporter`` (the module that is traced), and ``generate_args(space, batch_size)``
makes example observations for it.

The exported graph is the whole acting path, so an ONNX runtime needs nothing from this package:
observation preprocessing and normalisation (statistics frozen at their checkpointed values), encoder, core,
decoder and policy head.

- Inputs: one per observation key, named like the key (``obs`` for a plain Box space; an ``action_mask`` key, if
  the env has one, masks the logits), then ``rnn_states`` ``[B, get_rnn_size(cfg)]`` (zeros at the start of an
  episode; for a model without an RNN it is passed through unchanged, so callers treat every model alike).
- Outputs: ``actions`` (the deterministic action: argmax of the logits for discrete spaces, the Gaussian mean for
  continuous ones, per component for tuples), ``new_rnn_states`` and ``action_logits`` (the raw distribution
  parameters, for callers that want to sample instead).

The batch dimension is dynamic. The checkpoint is chosen like ``enjoy`` does (``--load_checkpoint_kind``).
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import Tensor, nn

from sample_factory.algo.utils.checkpoints import CheckpointError
from sample_factory.cfg.arguments import load_from_checkpoint
from sample_factory.cfg.validation import unavailable_feature_problems, warn_about_hub_flags
from sample_factory.enjoy import NoCheckpointError, load_policy, make_env
from sample_factory.envs.env_info import EnvInfo, extract_env_info
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.envs.spaces.layout import obs_space_dict
from sample_factory.model.action_distributions import argmax_actions
from sample_factory.model.actor_critic import ActorCritic
from sample_factory.model.encoder import ACTION_MASK_KEY
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode

ONNX_INSTALL_HINT = 'pip install "sample-factory[onnx]"'
RNN_STATES = "rnn_states"
OUTPUT_NAMES = ["actions", "new_rnn_states", "action_logits"]
OPSET_VERSION = 17


class OnnxExporter(nn.Module):
    """The acting path of an actor-critic as one module with positional tensor inputs (ONNX wants no dicts).

    ``forward(*obs, rnn_states)`` takes one tensor per observation key (``obs_keys``, the model's order) and the
    RNN states, and returns ``(actions, new_rnn_states, action_logits)`` as described in the module docstring.
    """

    def __init__(self, actor_critic: ActorCritic) -> None:
        super().__init__()
        self.actor_critic = actor_critic
        self.obs_keys = list(actor_critic.obs_space.spaces)
        self.rnn_size = max(1, get_rnn_size(actor_critic.cfg))  # a model without RNN still takes a [B, 1] state
        self.eval()  # the exported graph acts: no training-mode behaviour (e.g. normaliser updates) belongs in it

    @property
    def input_names(self) -> list[str]:
        return [*self.obs_keys, RNN_STATES]

    def example_args(self, batch_size: int = 1) -> tuple[Tensor, ...]:
        """Inputs of the right shapes and dtypes for tracing: sampled observations, zero RNN states."""
        obs = generate_args(self.actor_critic.obs_space, batch_size)
        return (*(obs[key] for key in self.obs_keys), torch.zeros(batch_size, self.rnn_size))

    def forward(self, *inputs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        if len(inputs) != len(self.obs_keys) + 1:
            raise ValueError(f"OnnxExporter takes {self.input_names} as positional inputs: got {len(inputs)} tensors")
        obs = dict(zip(self.obs_keys, inputs[:-1], strict=True))
        rnn_states = inputs[-1]
        ac = self.actor_critic
        normalized = ac.normalize_obs(obs)
        head_output = ac.forward_head(normalized)
        core_output, new_rnn_states = ac.forward_core(head_output, rnn_states)
        action_mask = obs.get(ACTION_MASK_KEY)
        result = ac.forward_tail(core_output, values_only=False, sample_actions=False, action_mask=action_mask)
        actions = argmax_actions(ac.action_distribution())
        return actions, new_rnn_states, result["action_logits"]


def generate_args(space: gym.Space, batch_size: int = 1) -> dict[str, Tensor]:
    """Example observations ``[batch_size, *shape]`` per key of the model's observation dict, sampled from ``space``.

    A plain (non-dict) space is the single key ``obs``, as the model sees it. Dtypes are the space's, so the
    traced graph takes observations exactly as the env produces them.
    """
    if batch_size < 1:
        raise ValueError(f"generate_args needs batch_size >= 1 to build example inputs: got {batch_size}")
    return {
        key: torch.from_numpy(np.stack([np.asarray(subspace.sample()) for _ in range(batch_size)]))
        for key, subspace in obs_space_dict(space).items()
    }


def create_onnx_exporter(cfg: Config, env: Any) -> OnnxExporter:
    """The trained policy of ``cfg``'s experiment wrapped for export, on the CPU in eval mode.

    ``cfg`` is the experiment's config (as ``load_from_checkpoint`` returns it); the checkpoint is chosen by
    ``--policy_index`` and ``--load_checkpoint_kind`` like ``enjoy`` does. ``env`` (e.g. from
    ``sample_factory.enjoy.make_env``) or its ``EnvInfo`` gives the spaces the model is built for.
    """
    env_info = env if isinstance(env, EnvInfo) else extract_env_info(env, cfg)
    model, _ = load_policy(cfg, env_info)
    return OnnxExporter(model.to("cpu").eval())


def export_model(exporter: OnnxExporter, path: str) -> str:
    """Write ``exporter``'s graph to ``path`` as ONNX (dynamic batch dimension); returns the path."""
    _require_onnx()
    names = exporter.input_names
    dynamic_axes = {name: {0: "batch"} for name in names + OUTPUT_NAMES}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated but needs no extra packages
        torch.onnx.export(
            exporter,
            exporter.example_args(),
            path,
            input_names=names,
            output_names=OUTPUT_NAMES,
            dynamic_axes=dynamic_axes,
            opset_version=OPSET_VERSION,
            dynamo=False,
        )
    return path


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
    except ImportError as exc:
        raise MissingDependencyError(f"ONNX export needs the onnx package: run {ONNX_INSTALL_HINT}") from exc


def export_onnx(cfg: Config, path: str) -> StatusCode:
    """Export the trained policy of ``cfg``'s experiment (``--policy_index``) to ``path``; returns the status."""
    refused = unavailable_feature_problems(cfg)
    if refused:
        log.error("%s", refused[0])
        return ExperimentStatus.FAILURE
    warn_about_hub_flags(cfg)
    try:
        cfg = load_from_checkpoint(cfg)
        env = make_env(cfg)
        try:
            exporter = create_onnx_exporter(cfg, env)
        finally:
            env.close()
        export_model(exporter, path)
    except (FileNotFoundError, NoCheckpointError, CheckpointError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    log.info("Exported the policy to %s (inputs: %s)", path, ", ".join(exporter.input_names))
    return ExperimentStatus.SUCCESS


def default_onnx_path(cfg: Config) -> str:
    """``{train_dir}/{experiment}/{experiment}.onnx``."""
    return os.path.join(cfg.train_dir, cfg.experiment, f"{cfg.experiment}.onnx")
