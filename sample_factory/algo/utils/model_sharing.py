"""Sample Factory 2's ``ParameterServer``: one policy's published weights and version, for whoever acts with it.

The mechanism is ours: ``policy_weights.PolicyWeights`` (one published copy of the weights and a sequence counter:
readers take no lock and never see a half-written state; the copy lives on the owner's GPU when the owner is on
one). ``ParameterServer`` puts Sample Factory 2's names on it and keeps the table of policy versions
(``policy_versions[policy_id]``) current, which is what a Sample Factory 2 learner and its readers exchange:

- the owner (the learner) calls ``init(model, policy_version, device)`` once its model exists, then
  ``update_weights(policy_version)`` after each training step;
- a reader in the same process uses ``actor_critic``; a reader anywhere (another process included) copies the
  latest weights into its own model with ``load_into(model)`` when ``policy_version`` moved.

Serial mode shares nothing across processes and serialises publishes with a ``threading.Lock``; otherwise the lock
comes from the ``spawn`` multiprocessing context (the one the parallel runner uses) and the versions table is moved
to shared memory, so a reader process started after ``init`` sees every later publish.

The readers' side has Sample Factory 2's names too: a ``ParameterClient`` (``make_parameter_client``) holds the
model an actor acts with. ``ParameterClientSerial`` acts with the owner's own model (serial mode: one process, no
copy); ``ParameterClientAsync`` keeps a model of its own and reloads it from the server whenever
``ensure_weights_updated()`` finds a newer version in the versions table.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import threading
from typing import Any

import torch
from torch import Tensor, nn

from sample_factory.algo.utils.policy_weights import PolicyWeights
from sample_factory.envs.env_info import EnvInfo
from sample_factory.model.actor_critic import create_actor_critic
from sample_factory.utils.gpu_utils import shared_weights_device
from sample_factory.utils.timing import Timing
from sample_factory.utils.typing import Config, PolicyID


class ParameterServer:
    """Publishes one policy's weights and version (``PolicyWeights``) and mirrors the version in ``policy_versions``.

    Args:
        policy_id: the policy this server publishes.
        policy_versions: int64 tensor ``[num_policies]``, one current version per policy; only entry ``policy_id``
            is written.
        serial_mode: True when learner and readers run in one process (``--serial_mode``).
    """

    def __init__(self, policy_id: PolicyID, policy_versions: Tensor, serial_mode: bool) -> None:
        _check_versions_table(policy_id, policy_versions)
        self.policy_id = policy_id
        self.serial_mode = serial_mode
        self.policy_versions = policy_versions if serial_mode else policy_versions.share_memory_()
        self.policy_lock: Any = threading.Lock() if serial_mode else multiprocessing.get_context("spawn").Lock()
        self.weights: PolicyWeights | None = None
        self.actor_critic: nn.Module | None = None
        self.device = torch.device("cpu")

    def init(self, model: nn.Module, policy_version: int = 0, device: torch.device | str | None = None) -> None:
        """Start publishing ``model`` (the owner's live model) at ``policy_version``; its device is ``device``."""
        self.actor_critic = model
        self.device = torch.device(device) if device is not None else _model_device(model)
        # the readers are not known here: the copy follows the owner's device (a reader elsewhere still loads it,
        # through a cross-device copy)
        buffer_device = shared_weights_device(self.device, [self.device])
        self.weights = PolicyWeights(model.state_dict(), self.policy_lock, buffer_device)
        self._publish(policy_version)

    def update_weights(self, policy_version: int | None = None) -> int:
        """Publish the current weights of ``actor_critic`` as ``policy_version`` (default: one past the last one).

        Returns the published version.
        """
        if self.actor_critic is None:
            raise RuntimeError(
                f"ParameterServer of policy {self.policy_id}: call init(model, policy_version, device) before "
                "update_weights()"
            )
        version = self.policy_version + 1 if policy_version is None else int(policy_version)
        self._publish(version)
        return version

    @property
    def policy_version(self) -> int:
        """The version of the weights last published (-1 before ``init``)."""
        return -1 if self.weights is None else self.weights.latest_version()

    def load_into(self, model: nn.Module) -> int:
        """Copy the published weights into a reader's ``model`` (any device); returns their version."""
        if self.weights is None:
            raise RuntimeError(f"ParameterServer of policy {self.policy_id} has published nothing yet: call init()")
        return self.weights.load_into(model)

    def _publish(self, version: int) -> None:
        self.weights.publish(self.actor_critic.state_dict(), version)
        self.policy_versions[self.policy_id] = version

    def __getstate__(self) -> dict:
        """A copy sent to a reader process leaves the owner's model behind: readers use ``load_into``."""
        state = dict(self.__dict__)
        state["actor_critic"] = None
        return state


def _check_versions_table(policy_id: PolicyID, policy_versions: Tensor) -> None:
    if not isinstance(policy_versions, Tensor) or policy_versions.dim() != 1:
        raise ValueError(
            "policy_versions must be a 1-D tensor with one entry per policy, e.g. "
            "torch.zeros(num_policies, dtype=torch.int64)"
        )
    if policy_versions.dtype.is_floating_point or policy_versions.dtype == torch.bool:
        raise ValueError(f"policy_versions holds integer versions: got dtype {policy_versions.dtype}, use torch.int64")
    if not 0 <= policy_id < policy_versions.shape[0]:
        raise ValueError(
            f"policy_id={policy_id} has no entry in policy_versions of {policy_versions.shape[0]} policies: "
            "allocate one entry per policy (--num_policies)"
        )


def _model_device(model: nn.Module) -> torch.device:
    parameter = next(model.parameters(), None)
    return parameter.device if parameter is not None else torch.device("cpu")


class ParameterClient:
    """An actor's view of one policy's weights, published by ``param_server``; see the subclasses.

    Call ``on_weights_initialized(state_dict, device, policy_version)`` once (what the learner's first publish
    carries), then ``ensure_weights_updated()`` before acting; ``actor_critic`` is the model to act with and
    ``policy_version`` the version it holds. ``timing`` (optional) times the reloads under ``weight_update``.
    """

    def __init__(self, param_server: ParameterServer, cfg: Config, env_info: EnvInfo, timing: Timing | None = None):
        self.server = param_server
        self.policy_id = param_server.policy_id
        self.cfg = cfg
        self.env_info = env_info
        self.timing = timing
        self.latest_policy_version = -1
        self.num_policy_updates = 0
        self._actor_critic: nn.Module | None = None

    @property
    def actor_critic(self) -> nn.Module:
        """The model to act with."""
        if self._actor_critic is None:
            raise RuntimeError(
                f"{type(self).__name__} of policy {self.policy_id} has no model yet: call "
                "on_weights_initialized(state_dict, device, policy_version) first"
            )
        return self._actor_critic

    @property
    def policy_version(self) -> int:
        """The version of the weights ``actor_critic`` holds (-1 before ``on_weights_initialized``)."""
        return self.latest_policy_version

    def _server_policy_version(self) -> int:
        return int(self.server.policy_versions[self.policy_id])

    def on_weights_initialized(self, state_dict: dict[str, Tensor], device: torch.device | str, policy_version: int):
        raise NotImplementedError(
            f"{type(self).__name__} is the base class: use ParameterClientSerial or ParameterClientAsync "
            "(make_parameter_client picks the one for the mode)"
        )

    def ensure_weights_updated(self) -> None:
        raise NotImplementedError(
            f"{type(self).__name__} is the base class: use ParameterClientSerial or ParameterClientAsync"
        )

    def cleanup(self) -> None:
        """Let go of the model."""
        self._actor_critic = None


class ParameterClientSerial(ParameterClient):
    """Serial mode: acts with the learner's own model (the server's ``actor_critic``), so nothing is ever copied."""

    def on_weights_initialized(self, state_dict: dict[str, Tensor], device: torch.device | str, policy_version: int):
        """Take the server's model; ``state_dict`` and ``device`` are already its own in serial mode."""
        if self.server.actor_critic is None:
            raise RuntimeError(
                f"ParameterServer of policy {self.policy_id} has no model: in serial mode the client acts with the "
                "learner's model, so call param_server.init(model, policy_version, device) first"
            )
        self._actor_critic = self.server.actor_critic
        self.latest_policy_version = int(policy_version)

    def ensure_weights_updated(self) -> None:
        """The shared model is always current: only the version is read."""
        self.latest_policy_version = self._server_policy_version()


class ParameterClientAsync(ParameterClient):
    """Parallel mode: a model of the client's own, reloaded from the server when a newer version is published."""

    def on_weights_initialized(self, state_dict: dict[str, Tensor], device: torch.device | str, policy_version: int):
        """Build this policy's model for the env (``create_actor_critic``) on ``device`` with ``state_dict``."""
        model = create_actor_critic(self.cfg, self.env_info.obs_space, self.env_info.action_space)
        model.model_to_device(device)
        model.load_state_dict(state_dict)
        self._actor_critic = model
        self.latest_policy_version = int(policy_version)

    def ensure_weights_updated(self) -> None:
        """Reload the weights when the versions table shows a version newer than the one held."""
        if self._server_policy_version() <= self.latest_policy_version:
            return
        timer = self.timing.timeit("weight_update") if self.timing is not None else contextlib.nullcontext()
        with timer:
            self.latest_policy_version = self.server.load_into(self.actor_critic)
        self.num_policy_updates += 1


def make_parameter_client(
    is_serial_mode: bool, parameter_server: ParameterServer, cfg: Config, env_info: EnvInfo, timing: Timing | None
) -> ParameterClient:
    """The client for the mode: ``ParameterClientSerial`` in serial mode, ``ParameterClientAsync`` otherwise."""
    client_class = ParameterClientSerial if is_serial_mode else ParameterClientAsync
    return client_class(parameter_server, cfg, env_info, timing)
