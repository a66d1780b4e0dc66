"""Optional Weights & Biases logging of a run's summaries (``--with_wandb``): starting and ending the W&B run.

wandb is an optional extra (``pip install "sample-factory[wandb]"``), so it is imported only when the flag asks for
it. The W&B run id is kept in the experiment folder, so a resumed experiment appends to the same W&B run instead of
starting a new one; W&B's local files go to ``{experiment folder}/wandb``. The runner mirrors its TensorBoard
scalars through the :class:`WandbLogger` that :func:`init_wandb` returns; :func:`finish_wandb` closes it.
"""

from __future__ import annotations

import argparse
import os
import uuid
from types import ModuleType
from typing import TYPE_CHECKING, Any

from sample_factory.utils.logging_setup import log
from sample_factory.utils.paths import experiment_dir

if TYPE_CHECKING:  # the aliases pull in gymnasium, which W&B logging does not need at run time
    from sample_factory.utils.typing import Config, PolicyID

__all__ = [
    "WANDB_INSTALL_HINT",
    "RUN_ID_FILE",
    "import_wandb",
    "wandb_run_id",
    "WandbLogger",
    "init_wandb",
    "finish_wandb",
]

WANDB_INSTALL_HINT = 'pip install "sample-factory[wandb]"'
RUN_ID_FILE = "wandb_run_id.txt"


def import_wandb() -> ModuleType:
    """The wandb module, or an ImportError naming the flag and the install command."""
    try:
        import wandb
    except ImportError as exc:
        raise ImportError(
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
        self.closed = False

    def log(self, policy_id: PolicyID, values: dict[str, float], env_steps: int) -> None:
        data: dict[str, float] = {f"p{policy_id}/{tag}": value for tag, value in values.items() if value is not None}
        data["global_step"] = env_steps
        try:
            self.run.log(data)
            self.rows_logged += 1
        except Exception as exc:  # a network hiccup must not stop the training
            log.warning("W&B logging failed: %s", exc)

    def close(self) -> None:
        """Finish the W&B run (uploads what is left); closing twice finishes it once."""
        global _active_logger
        if self.closed:
            return
        self.closed = True
        if _active_logger is self:
            _active_logger = None
        try:
            self.run.finish()
        except Exception as exc:
            log.warning("Closing the W&B run failed: %s", exc)
        else:
            log.info("W&B run %s closed after %d logged rows", self.run.id, self.rows_logged)


# the run init_wandb started in this process, which finish_wandb ends
_active_logger: WandbLogger | None = None


def _cfg_dict(cfg: Config) -> dict[str, Any]:
    return dict(vars(cfg)) if isinstance(cfg, argparse.Namespace) else dict(cfg)


def init_wandb(cfg: Config, wandb: ModuleType | None = None) -> WandbLogger | None:
    """Start (or, for a resumed experiment, continue) the W&B run of ``cfg``'s experiment when ``--with_wandb=True``.

    Returns the logger the runner mirrors its summaries through, or None without the flag. ``wandb``: the module to
    use (default: import it, an ImportError naming the install command when it is missing).
    """
    global _active_logger
    if not cfg.with_wandb:
        return None
    wandb = import_wandb() if wandb is None else wandb
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
        config=_cfg_dict(cfg),
    )
    log.info("Logging to W&B run %s (project %s)", run.id, cfg.wandb_project)
    _active_logger = WandbLogger(wandb, run)
    return _active_logger


def finish_wandb(cfg: Config) -> None:
    """End the W&B run that :func:`init_wandb` started in this process (nothing without ``--with_wandb``, or when the
    run was already closed)."""
    if cfg.with_wandb and _active_logger is not None:
        _active_logger.close()
