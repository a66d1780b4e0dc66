"""Optional Weights & Biases logging of the runner's summaries (``--with_wandb``).

wandb is an optional extra (``pip install "sample-factory[wandb]"``), so it is imported only when the flag asks
for it; a missing package stops the run before any process starts, with the command that fixes it. The W&B run
id is kept in the experiment folder, so a resumed experiment appends to the same W&B run instead of starting a
new one.
"""

from __future__ import annotations

import os
import uuid
from types import ModuleType
from typing import Any

from sample_factory.cfg.config_io import cfg_dict
from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config, PolicyID
from sample_factory.utils.utils import experiment_dir

WANDB_INSTALL_HINT = 'pip install "sample-factory[wandb]"'
RUN_ID_FILE = "wandb_run_id.txt"


def import_wandb() -> ModuleType:
    """The wandb module, or MissingDependencyError naming the flag and the install command."""
    try:
        import wandb
    except ImportError as exc:
        raise MissingDependencyError(
            f"--with_wandb=True needs the wandb package, which is not installed: run {WANDB_INSTALL_HINT} "
            "or pass --with_wandb=False"
        ) from exc
    return wandb


def wandb_run_id(cfg: Config) -> str:
    """A stable id per experiment folder: created on the first run, read back on every resume."""
    path = os.path.join(experiment_dir(cfg), RUN_ID_FILE)
    if os.path.isfile(path):
        with open(path) as f:
            run_id = f.read().strip()
        if run_id:
            return run_id
    run_id = uuid.uuid4().hex[:16]
    with open(path, "w") as f:
        f.write(run_id + "\n")
    return run_id


class WandbLogger:
    """Mirrors the TensorBoard scalars to one W&B run; metrics of policy ``p`` are prefixed ``p{p}/``."""

    def __init__(self, wandb: ModuleType, run: Any) -> None:
        self.wandb = wandb
        self.run = run
        self.rows_logged = 0

    def log(self, policy_id: PolicyID, values: dict[str, float], env_steps: int) -> None:
        data: dict[str, float] = {f"p{policy_id}/{tag}": value for tag, value in values.items() if value is not None}
        data["global_step"] = env_steps
        try:
            self.run.log(data)
            self.rows_logged += 1
        except Exception as exc:  # a network hiccup must not stop the training
            log.warning("W&B logging failed: %s", exc)

    def close(self) -> None:
        try:
            self.run.finish()
        except Exception as exc:
            log.warning("Closing the W&B run failed: %s", exc)
        else:
            log.info("W&B run %s closed after %d logged rows", self.run.id, self.rows_logged)


def init_wandb(cfg: Config) -> WandbLogger | None:
    """A logger when ``--with_wandb=True`` (None otherwise); raises MissingDependencyError when wandb is missing."""
    if not cfg.with_wandb:
        return None
    wandb = import_wandb()
    run = wandb.init(
        id=wandb_run_id(cfg),
        resume="allow",
        entity=cfg.wandb_user,
        project=cfg.wandb_project,
        group=cfg.wandb_group or cfg.env,
        job_type=cfg.wandb_job_type,
        tags=list(cfg.wandb_tags or []),
        name=cfg.experiment,
        dir=experiment_dir(cfg),
        config=cfg_dict(cfg),
    )
    log.info("Logging to W&B run %s (project %s)", run.id, cfg.wandb_project)
    return WandbLogger(wandb, run)
