"""Moving a donor policy's learner state to a recipient: a file in the experiment folder, a digest to prove it.

The donor's learner writes its state (model with normalisers, optimiser) between two of its training steps, under
its training lock, and messages the recipient's learner, which loads it between two of its own steps and then
deletes the file. Going through a file works identically in parallel and serial mode, costs one write per
replacement (rare: every ``--pbt_period_env_steps``), and keeps the donor's GPU memory out of the recipient's
process. The digest of the weights is logged on both sides: equal digests show the recipient trains from exactly
the weights the donor had at the moment of the copy.
"""

from __future__ import annotations

import hashlib
import os

import torch

from sample_factory.algo.learning.learner import Learner


def weights_digest(model_state: dict[str, torch.Tensor]) -> str:
    """A short hash of every tensor of a model's ``state_dict`` (names and bytes), independent of the device."""
    h = hashlib.sha1()
    for name in sorted(model_state):
        tensor = model_state[name].detach().to("cpu").contiguous()
        h.update(name.encode())
        h.update(tensor.numpy().tobytes() if tensor.numel() else b"")
    return h.hexdigest()[:12]


def save_donor_state(learner: Learner, path: str) -> str:
    """Write the parts of the donor's state a recipient takes over; returns the weights' digest."""
    state = {"model": learner.actor_critic.state_dict(), "optimizer": learner.optimizer.state_dict()}
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)
    return weights_digest(state["model"])


def load_donor_state(path: str, device: torch.device) -> dict:
    """Read what ``save_donor_state`` wrote (weights-only unpickling: plain tensors and dicts)."""
    return torch.load(path, map_location=device, weights_only=True)
