"""The runner's side of the optional Weights & Biases logging (``--with_wandb``).

The W&B run itself is started and ended in :mod:`sample_factory.utils.wandb_utils`; here a missing wandb package
becomes a :class:`MissingDependencyError`, which the command-line entry points report as a missing optional
dependency and which stops the run before any process starts.
"""

from __future__ import annotations

from types import ModuleType

from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils import wandb_utils as _wandb_utils
from sample_factory.utils.typing import Config
from sample_factory.utils.wandb_utils import RUN_ID_FILE, WANDB_INSTALL_HINT, WandbLogger, finish_wandb, wandb_run_id

__all__ = [
    "RUN_ID_FILE",
    "WANDB_INSTALL_HINT",
    "WandbLogger",
    "wandb_run_id",
    "import_wandb",
    "init_wandb",
    "finish_wandb",
]


def import_wandb() -> ModuleType:
    """The wandb module, or MissingDependencyError naming the flag and the install command."""
    try:
        return _wandb_utils.import_wandb()
    except ImportError as exc:
        raise MissingDependencyError(str(exc)) from exc


def init_wandb(cfg: Config) -> WandbLogger | None:
    """A logger when ``--with_wandb=True`` (None otherwise); raises MissingDependencyError when wandb is missing."""
    if not cfg.with_wandb:
        return None
    return _wandb_utils.init_wandb(cfg, import_wandb())
