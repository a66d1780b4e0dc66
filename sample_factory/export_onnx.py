"""Export a trained policy to ONNX: ``export_onnx(cfg, f) -> status``.

Built from Sample Factory 2's pieces, usable on their own: ``create_onnx_exporter(cfg, env)`` loads the
policy and wraps it in an ``OnnxExporter`` (the module that is traced); ``generate_args(space, batch_size)``,
``sample_space(space)``, ``unsqueeze_args(args)`` and ``generate_rnn_states(cfg)`` make example inputs for it;
``create_forward`` / ``patch_forward`` give a module whose ``forward`` takes keywords a positional one (what
``torch.onnx.export`` calls).

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

Called from Python with keywords (``exporter(**observations, rnn_states=...)``), an ``OnnxExporter`` answers as
Sample Factory 2's does: the actions alone for a model without an RNN, ``(actions, new_rnn_states)`` with one.
"""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Sequence
from typing import IO, Any

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
    Called with keywords instead (one per observation key, ``rnn_states`` optional: zeros when left out), it returns
    the actions, or ``(actions, new_rnn_states)`` when ``cfg.use_rnn``. ``env_info`` is the env the policy acts in.
    """

    def __init__(self, cfg: Config, env_info: EnvInfo | None, actor_critic: ActorCritic) -> None:
        super().__init__()
        if not isinstance(actor_critic, nn.Module):
            raise TypeError(
                f"OnnxExporter(cfg, env_info, actor_critic) needs the policy's model as actor_critic, got "
                f"{type(actor_critic).__name__}; create_onnx_exporter(cfg, env) loads it from the checkpoint"
            )
        self.cfg = cfg
        self.env_info = env_info
        self.actor_critic = actor_critic
        self.obs_keys = list(actor_critic.obs_space.spaces)
        self.rnn_size = get_rnn_size(cfg)  # a model without RNN still takes a [B, 1] state
        self.eval()  # the exported graph acts: no training-mode behaviour (e.g. normaliser updates) belongs in it

    @property
    def input_names(self) -> list[str]:
        return [*self.obs_keys, RNN_STATES]

    def example_args(self, batch_size: int = 1) -> tuple[Tensor, ...]:
        """Inputs of the right shapes and dtypes for tracing: sampled observations, zero RNN states."""
        obs = generate_args(self.actor_critic.obs_space, batch_size)
        return (*(obs[key] for key in self.obs_keys), generate_rnn_states(self.cfg, batch_size))

    def forward(self, *inputs: Tensor, **named: Tensor) -> Any:
        if named:
            return self._forward_named(inputs, named)
        if len(inputs) != len(self.obs_keys) + 1:
            raise ValueError(f"OnnxExporter takes {self.input_names} as positional inputs: got {len(inputs)} tensors")
        return self.act(dict(zip(self.obs_keys, inputs[:-1], strict=True)), inputs[-1])

    def _forward_named(self, inputs: tuple[Tensor, ...], named: dict[str, Tensor]) -> Tensor | tuple[Tensor, Tensor]:
        unknown = sorted(set(named) - set(self.input_names))
        missing = [key for key in self.obs_keys if key not in named]
        if inputs or unknown or missing:
            raise ValueError(
                f"OnnxExporter called with keywords takes exactly the observation keys {self.obs_keys} (and "
                f"optionally {RNN_STATES}): unknown {unknown}, missing {missing}, {len(inputs)} positional"
            )
        obs = {key: named[key] for key in self.obs_keys}
        rnn_states = named.get(RNN_STATES)
        if rnn_states is None:
            rnn_states = generate_rnn_states(self.cfg, next(iter(obs.values())).shape[0])
        actions, new_rnn_states, _ = self.act(obs, rnn_states)
        return (actions, new_rnn_states) if self.cfg.use_rnn else actions

    def act(self, obs: dict[str, Tensor], rnn_states: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Deterministic actions, new RNN states and action logits for a batch of observations ``[B, ...]``."""
        ac = self.actor_critic
        normalized = ac.normalize_obs(obs)
        head_output = ac.forward_head(normalized)
        core_output, new_rnn_states = ac.forward_core(head_output, rnn_states)
        action_mask = obs.get(ACTION_MASK_KEY)
        result = ac.forward_tail(core_output, values_only=False, sample_actions=False, action_mask=action_mask)
        actions = argmax_actions(ac.action_distribution())
        return actions, new_rnn_states, result["action_logits"]


def sample_space(space: gym.Space) -> Tensor | dict[str, Any]:
    """One random observation of ``space`` as tensors (no batch dimension): a dict of them for a Dict space."""
    if isinstance(space, gym.spaces.Dict):
        return {key: sample_space(subspace) for key, subspace in space.spaces.items()}
    return torch.from_numpy(np.asarray(space.sample()))


def unsqueeze_args(args: dict[str, Tensor]) -> dict[str, Tensor]:
    """A batch of one: each tensor of ``args`` with a leading dimension of size 1 (e.g. after :func:`sample_space`)."""
    return {key: value.unsqueeze(0) for key, value in args.items()}


def generate_args(space: gym.Space, batch_size: int = 1) -> dict[str, Tensor]:
    """Example observations ``[batch_size, *shape]`` per key of the model's observation dict, sampled from ``space``.

    A plain (non-dict) space is the single key ``obs``, as the model sees it. Dtypes are the space's, so the
    traced graph takes observations exactly as the env produces them.
    """
    if batch_size < 1:
        raise ValueError(f"generate_args needs batch_size >= 1 to build example inputs: got {batch_size}")
    return {
        key: torch.stack([sample_space(subspace) for _ in range(batch_size)])
        for key, subspace in obs_space_dict(space).items()
    }


def generate_rnn_states(cfg: Config, batch_size: int = 1) -> Tensor:
    """Zero RNN states ``[batch_size, get_rnn_size(cfg)]``: the state at the start of an episode."""
    return torch.zeros(batch_size, get_rnn_size(cfg), dtype=torch.float32)


def create_forward(original_forward: Callable[..., Any], arg_names: Sequence[str]) -> Callable[..., Any]:
    """A function taking ``arg_names`` positionally that calls ``original_forward`` with them as keywords.

    ``torch.onnx.export`` passes the example inputs positionally; this lets a ``forward(**inputs)`` be exported with
    its inputs in a chosen order (the order of the graph's input names). Its signature names the arguments.
    """
    names = list(arg_names)

    def forward(*args: Any) -> Any:
        if len(args) != len(names):
            raise TypeError(f"forward takes {len(names)} positional inputs {names}, got {len(args)}")
        return original_forward(**dict(zip(names, args, strict=True)))

    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_ONLY) for name in names]
    forward.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    return forward


def patch_forward(model: nn.Module, input_names: Sequence[str]) -> nn.Module:
    """Make ``model(*inputs)`` call its keyword ``forward`` with ``input_names``, in that order; returns ``model``."""
    model.forward = create_forward(model.forward, input_names)  # type: ignore[method-assign]
    return model


def create_onnx_exporter(cfg: Config, env: Any, enable_jit: bool = False) -> OnnxExporter:
    """The trained policy of ``cfg``'s experiment wrapped for export, on the CPU in eval mode.

    ``cfg`` is the experiment's config (as ``load_from_checkpoint`` returns it); the checkpoint is chosen by
    ``--policy_index`` and ``--load_checkpoint_kind`` like ``enjoy`` does. ``env`` (e.g. from
    ``sample_factory.enjoy.make_env``) or its ``EnvInfo`` gives the spaces the model is built for.
    ``enable_jit`` is accepted for Sample Factory 2's signature: the exporter takes positional inputs (for the
    graph) and keyword inputs (from Python) alike, so there is no separate mode to choose.
    """
    del enable_jit
    env_info = env if isinstance(env, EnvInfo) else extract_env_info(env, cfg)
    model, _ = load_policy(cfg, env_info)
    return OnnxExporter(cfg, env_info, model.to("cpu").eval())


def export_model(exporter: OnnxExporter, f: str | os.PathLike | IO[bytes]) -> str | os.PathLike | IO[bytes]:
    """Write ``exporter``'s graph as ONNX (dynamic batch dimension) to the file ``f`` (a path or a binary stream)."""
    _require_onnx()
    names = exporter.input_names
    dynamic_axes = {name: {0: "batch"} for name in names + OUTPUT_NAMES}
    if isinstance(f, (str, os.PathLike)):
        os.makedirs(os.path.dirname(os.path.abspath(f)), exist_ok=True)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter is deprecated but needs no extra packages
        torch.onnx.export(
            exporter,
            exporter.example_args(),
            f,
            input_names=names,
            output_names=OUTPUT_NAMES,
            dynamic_axes=dynamic_axes,
            opset_version=OPSET_VERSION,
            dynamo=False,
        )
    return f


def _require_onnx() -> None:
    try:
        import onnx  # noqa: F401  (torch.onnx.export needs it)
    except ImportError as exc:
        raise MissingDependencyError(f"ONNX export needs the onnx package: run {ONNX_INSTALL_HINT}") from exc


def export_onnx(cfg: Config, f: str | os.PathLike | IO[bytes]) -> StatusCode:
    """Export the trained policy of ``cfg``'s experiment (``--policy_index``) to the file ``f`` (a path or a binary
    stream); returns the status."""
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
        export_model(exporter, f)
    except (FileNotFoundError, NoCheckpointError, CheckpointError, UnknownEnvError, MissingDependencyError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE
    log.info("Exported the policy to %s (inputs: %s)", f, ", ".join(exporter.input_names))
    return ExperimentStatus.SUCCESS


def default_onnx_path(cfg: Config) -> str:
    """``{train_dir}/{experiment}/{experiment}.onnx``."""
    return os.path.join(cfg.train_dir, cfg.experiment, f"{cfg.experiment}.onnx")
