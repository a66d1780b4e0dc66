"""The per-policy files of a PBT run, in the experiment folder, with the names Sample Factory 2 users know.

- ``policy_NN_cfg.json``: the policy's current PBT-managed hyper-parameters (``mutation.hyperparameters_of``);
- ``policy_NN_reward_shaping.json``: its reward-shaping scheme (only for envs that have one).

Both are rewritten atomically (a temporary file renamed over the old one) after every change, so a run killed at
any moment leaves either the old or the new file, never half of one. On resume they are read back; a user may also
write them before the first run to start a population from chosen values.
"""

from __future__ import annotations

import json
import os
from typing import Any

from sample_factory.utils.typing import Config, PolicyID
from sample_factory.utils.utils import experiment_dir


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
