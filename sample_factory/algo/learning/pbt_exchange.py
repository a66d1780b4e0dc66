"""What a learner shares with population-based training: the mutable hyper-parameters, the per-policy files and
the donor's weights file of a replacement.

PBT itself (``sample_factory.pbt``) runs on the runner and decides; learners only apply its decisions. What both
sides must agree on lives here, below both.

Per-policy files in the experiment folder, with the names Sample Factory 2 users know:

- ``policy_NN_cfg.json``: the policy's current PBT-managed hyper-parameters (``hyperparameters_of``);
- ``policy_NN_reward_shaping.json``: its reward-shaping scheme (only for envs that have one).

Both are rewritten atomically (a temporary file renamed over the old one) after every change, so a run killed at
any moment leaves either the old or the new file, never half of one. On resume they are read back; a user may also
write them before the first run to start a population from chosen values.

Moving a donor policy's learner state to a recipient goes through a file in the experiment folder, with a digest to
prove it: the donor's learner writes its state (model with normalisers, optimiser) between two of its training steps,
under its training lock, and messages the recipient's learner, which loads it between two of its own steps and then
deletes the file. A file works identically in parallel and serial mode, costs one write per replacement (rare: every
``--pbt_period_env_steps``), and keeps the donor's GPU memory out of the recipient's process. The digest of the
weights is logged on both sides: equal digests show the recipient trains from exactly the weights the donor had at
the moment of the copy.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import torch

from sample_factory.utils.flags import flag_value
from sample_factory.utils.typing import Config, PolicyID
from sample_factory.utils.utils import experiment_dir

# name -> (lower bound, upper bound) of the values a mutation may produce
HYPERPARAMETER_BOUNDS: dict[str, tuple[float, float]] = {
    "learning_rate": (1e-7, 1e-2),
    "exploration_loss_coeff": (1e-6, 0.5),
    "value_loss_coeff": (1e-3, 10.0),
    "max_grad_norm": (1e-2, 100.0),
    "ppo_clip_ratio": (0.01, 0.5),
    "ppo_clip_value": (0.01, 100.0),
}
GAMMA_BOUNDS = (0.9, 0.9999)
# a mutated reward-shaping term stays within this factor of the env's default value for it
REWARD_SHAPING_RANGE = 100.0


def mutable_hyperparameters(cfg: Config) -> list[str]:
    """Names PBT may mutate for this run: the table above, plus ``gamma`` with ``--pbt_optimize_gamma``."""
    names = list(HYPERPARAMETER_BOUNDS)
    if cfg.pbt_optimize_gamma:
        names.append("gamma")
    return names


def hyperparameters_of(cfg: Config) -> dict[str, float]:
    """The values of every PBT-managed hyper-parameter in ``cfg`` (gamma always: it is persisted either way)."""
    return {name: float(flag_value(cfg, name)) for name in (*HYPERPARAMETER_BOUNDS, "gamma")}


def policy_cfg_file(cfg: Config, policy_id: PolicyID) -> str:
    return os.path.join(experiment_dir(cfg), f"policy_{policy_id:02d}_cfg.json")


def policy_reward_shaping_file(cfg: Config, policy_id: PolicyID) -> str:
    return os.path.join(experiment_dir(cfg), f"policy_{policy_id:02d}_reward_shaping.json")


def donor_weights_file(cfg: Config, donor: PolicyID, recipient: PolicyID) -> str:
    """Where a donor learner leaves its state for a recipient (deleted by the recipient once loaded)."""
    folder = os.path.join(experiment_dir(cfg), "pbt")
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, f"donor_p{donor:02d}_for_p{recipient:02d}.pth")


def write_json_atomic(path: str, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` so that readers see either the previous file or the complete new one."""
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def read_json(path: str) -> Any | None:
    """The file's content, or None when it does not exist. A corrupt file is an error that names it."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}): fix or delete it, then start the run again") from exc


def load_policy_hyperparameters(cfg: Config, policy_id: PolicyID, known: dict[str, float]) -> dict[str, float] | None:
    """The saved hyper-parameters of ``policy_id`` restricted to ``known`` names, or None without a file.

    Unknown names are refused rather than ignored: a typo in a hand-written file would otherwise go unnoticed.
    """
    path = policy_cfg_file(cfg, policy_id)
    data = read_json(path)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ValueError(f'{path} must hold a JSON object of hyper-parameters, e.g. {{"learning_rate": 0.0001}}')
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"{path}: {unknown} are not PBT hyper-parameters; known ones are {sorted(known)}")
    return {name: float(value) for name, value in data.items()}


def weights_digest(model_state: dict[str, torch.Tensor]) -> str:
    """A short hash of every tensor of a model's ``state_dict`` (names and bytes), independent of the device."""
    h = hashlib.sha1()
    for name in sorted(model_state):
        tensor = model_state[name].detach().to("cpu").contiguous()
        h.update(name.encode())
        h.update(tensor.numpy().tobytes() if tensor.numel() else b"")
    return h.hexdigest()[:12]


def save_donor_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer, path: str) -> str:
    """Write the parts of the donor's state a recipient takes over; returns the weights' digest."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
    tmp = f"{path}.tmp{os.getpid()}"
    torch.save(state, tmp)
    os.replace(tmp, path)
    return weights_digest(state["model"])


def load_donor_state(path: str, device: torch.device) -> dict:
    """Read what ``save_donor_state`` wrote (weights-only unpickling: plain tensors and dicts)."""
    return torch.load(path, map_location=device, weights_only=True)
