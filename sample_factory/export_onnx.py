"""Export a trained policy to ONNX: ``export_onnx(cfg, path) -> status``.

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

import numpy as np
import torch
from torch import Tensor, nn

from sample_factory.algo.learning.checkpoints import CheckpointError
from sample_factory.algo.utils.action_distributions import argmax_actions
from sample_factory.algo.utils.env_info import EnvInfo, extract_env_info
from sample_factory.algo.utils.misc import ExperimentStatus
from sample_factory.cfg.arguments import load_from_checkpoint
from sample_factory.enjoy import NoCheckpointError, load_policy
from sample_factory.envs.create_env import create_env
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.model.actor_critic import ActorCritic
from sample_factory.model.encoder import ACTION_MASK_KEY
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, StatusCode

ONNX_INSTALL_HINT = 'pip install "sample-factory[onnx]"'
RNN_STATES = "rnn_states"
OUTPUT_NAMES = ["actions", "new_rnn_states", "action_logits"]
OPSET_VERSION = 17


class OnnxPolicy(nn.Module):
    """The acting path of an actor-critic as one module with positional tensor inputs (ONNX wants no dicts)."""

    def __init__(self, actor_critic: ActorCritic, obs_keys: list[str]) -> None:
        super().__init__()
        self.actor_critic = actor_critic
        self.obs_keys = obs_keys

    def forward(self, *inputs: Tensor) -> tuple[Tensor, Tensor, Tensor]:
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


def example_inputs(actor_critic: ActorCritic, rnn_size: int, batch: int = 1) -> tuple[list[str], list[Tensor]]:
    """Input names and zero tensors of the right shapes and dtypes (observations as the env produces them)."""
    names, tensors = [], []
    for key, space in actor_critic.obs_space.spaces.items():
        names.append(key)
        tensors.append(torch.from_numpy(np.zeros((batch, *space.shape), dtype=space.dtype)))
    names.append(RNN_STATES)
    tensors.append(torch.zeros(batch, max(1, rnn_size)))
    return names, tensors


def export_model(actor_critic: ActorCritic, rnn_size: int, path: str) -> str:
    """Write ``actor_critic`` (on the CPU, eval mode) to ``path`` as ONNX; returns the path."""
    _require_onnx()
    actor_critic = actor_critic.to("cpu").eval()
    names, inputs = example_inputs(actor_critic, rnn_size)
    module = OnnxPolicy(actor_critic, names[:-1])
    dynamic_axes = {name: {0: "batch"} for name in names + OUTPUT_NAMES}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated but needs no extra packages
        torch.onnx.export(
            module,
            tuple(inputs),
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


def _env_info(cfg: AttrDict) -> EnvInfo:
    env = create_env(cfg.env, cfg=cfg, env_config=AttrDict(worker_index=0, vector_index=0, env_id=0))
    try:
        return extract_env_info(env, cfg)
    finally:
        env.close()


def export_onnx(cfg: Config, path: str) -> StatusCode:
    """Export the trained policy of ``cfg``'s experiment (``--policy_index``) to ``path``; returns the status."""
    try:
        cfg = load_from_checkpoint(cfg)
        env_info = _env_info(cfg)
        model, _ = load_policy(cfg, env_info)
        export_model(model, get_rnn_size(cfg), path)
    except (FileNotFoundError, NoCheckpointError, CheckpointError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    log.info("Exported the policy to %s (inputs: %s)", path, ", ".join(_input_names(model, get_rnn_size(cfg))))
    return ExperimentStatus.SUCCESS


def _input_names(model: ActorCritic, rnn_size: int) -> list[str]:
    return example_inputs(model, rnn_size)[0]


def default_onnx_path(cfg: Config) -> str:
    """``{train_dir}/{experiment}/{experiment}.onnx``."""
    return os.path.join(cfg.train_dir, cfg.experiment, f"{cfg.experiment}.onnx")
