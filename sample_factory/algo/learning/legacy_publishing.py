"""How a learner built with Sample Factory 2's constructor publishes: its policy version into a shared table and its
weights through a ``ParameterServer``.

Sample Factory 2's ``Learner(cfg, env_info, policy_versions_tensor, policy_id, param_server)`` hands the learner both
outlets; scripts that drive a learner themselves (and Sample Factory 2's tests) read them. This package's own
pipeline publishes through ``PolicyWeights`` from the learner worker and passes neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor

from sample_factory.utils.typing import Config, PolicyID

if TYPE_CHECKING:
    from sample_factory.algo.utils.model_sharing import ParameterServer


class LegacyPublishing:
    """The versions table (``versions[policy_id]``) and parameter server of one learner; either may be None."""

    def __init__(self, policy_id: PolicyID, versions: Tensor | None, param_server: ParameterServer | None) -> None:
        self.policy_id = policy_id
        self.versions = versions
        self.param_server = param_server

    @property
    def active(self) -> bool:
        return self.versions is not None or self.param_server is not None

    def start(self, model: torch.nn.Module, version: int, device: torch.device) -> None:
        """The learner's model exists: the parameter server shares it, the table gets the first version."""
        if self.param_server is not None:
            self.param_server.init(model, version, device)
        self.record(version)

    def publish(self, version: int) -> None:
        """New weights: the parameter server publishes them, the table records their version."""
        if self.param_server is not None:
            self.param_server.update_weights(version)
        self.record(version)

    def record(self, version: int) -> None:
        if self.versions is not None:
            self.versions[self.policy_id] = version


def model_initialization_data(
    cfg: Config, policy_id: PolicyID, actor_critic: torch.nn.Module, policy_version: int, device: torch.device
) -> tuple[PolicyID, dict[str, Tensor] | None, torch.device, int]:
    """``(policy_id, state_dict, device, policy_version)``: what a reader of the policy needs to start acting with it.

    In serial mode (``--serial_mode``) the readers share the learner's process and act with its model itself
    (``model_sharing.ParameterClientSerial``), so no copy of the weights is made: ``state_dict`` is None. Otherwise
    it is the model's state dict, which a reader in another process loads into its own copy of the model.
    """
    state_dict = None if cfg.serial_mode else actor_critic.state_dict()
    return policy_id, state_dict, device, policy_version
