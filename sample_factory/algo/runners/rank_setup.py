"""How a rank joins a distributed run, before its runner exists: one experiment, one configuration.

Rank 0 applies ``--restart_behavior`` to the experiment folder (resuming loads its config.json) exactly as a
single-machine run does, and publishes the resulting configuration in the ranks' store; every other rank waits for it
and runs with it, so all ranks train with the same flags even when only rank 0 can see the experiment folder. Only its
``--seed`` differs (``distributed.rank_seed``: the ranks must not collect the same experience), and each rank keeps its
own ``--train_dir`` (a folder name that differs between machines). A configuration that rank 0 refuses is reported on
every rank. What cannot run distributed is refused here, by every rank alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import torch.distributed as dist

from sample_factory.cfg.config_io import cfg_dict
from sample_factory.cfg.experiment_files import already_finished, prepare_experiment_dir
from sample_factory.cfg.validation import ConfigError
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.distributed import SEED_STRIDE, RankInfo, open_store, pin_rank_gpu, rank_seed
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config

EXPERIMENT_KEY = "experiment"


@dataclass
class RankContext:
    """What a rank's runner knows about the distributed run: who it is, the store, and rank 0's start-up decision."""

    info: RankInfo
    store: dist.Store
    finished: bool  # rank 0 found the experiment already at --train_for_env_steps: every rank has nothing to do


def refuse_unsupported(cfg: Config, info: RankInfo) -> None:
    """Combinations a distributed run cannot make, refused with the reason and the alternative."""
    if cfg.with_pbt:
        raise ConfigError(
            f"--with_pbt=True cannot run distributed ({info.world_size} ranks: RANK/WORLD_SIZE are set by torchrun, "
            "srun or the launcher): PBT replaces one policy's weights by another's while the ranks must keep "
            "identical weights. Run PBT on one machine, or drop --with_pbt for a distributed run."
        )
    if cfg.serial_mode and cfg.num_policies > 1:
        raise ConfigError(
            f"--serial_mode=True with --num_policies={cfg.num_policies} cannot run distributed: on the one thread, "
            "each policy's learner would wait for the other ranks while they wait for another policy's. Use "
            "--serial_mode=False (each policy's learner in its own process) or one policy."
        )


def join_ranks(cfg: Config, info: RankInfo) -> tuple[Config, RankContext]:
    """Meet the other ranks: pin this rank's GPU, open the store, take rank 0's configuration (module docstring)."""
    refuse_unsupported(cfg, info)
    pin_rank_gpu(info, cfg.device)
    store = open_store(info, cfg.distributed_timeout, host=True)
    if info.is_main:
        cfg, finished = _prepare_as_rank_zero(cfg, store)
    else:
        cfg, finished = _configuration_of_rank_zero(cfg, info, store)
    log.info("Joined a distributed run as %s: experiment %s", info, cfg.experiment)
    return cfg, RankContext(info, store, finished)


def _prepare_as_rank_zero(cfg: Config, store: dist.Store) -> tuple[Config, bool]:
    try:
        cfg = prepare_experiment_dir(cfg)
        finished = already_finished(cfg)
    except ConfigError as exc:
        store.set(EXPERIMENT_KEY, json.dumps({"error": str(exc)}))
        raise
    store.set(EXPERIMENT_KEY, json.dumps({"cfg": cfg_dict(cfg), "finished": finished}))
    return cfg, finished


def _configuration_of_rank_zero(cfg: Config, info: RankInfo, store: dist.Store) -> tuple[Config, bool]:
    try:
        published = json.loads(store.get(EXPERIMENT_KEY).decode())
    except RuntimeError as exc:  # the store's timeout: rank 0 never got that far
        raise ConfigError(
            f"{info}: rank 0 published no configuration within --distributed_timeout={cfg.distributed_timeout} s "
            f"({exc}); see rank 0's output"
        ) from exc
    if "error" in published:
        raise ConfigError(f"rank 0 refused the configuration: {published['error']}")
    ranked = AttrDict(published["cfg"])
    ranked.cli_args = AttrDict(ranked.cli_args or {})
    ranked.train_dir = cfg.train_dir
    ranked.seed = rank_seed(ranked.seed, info)
    if ranked.seed is not None:
        log.info("%s runs with --seed=%d (rank 0's --seed + rank x %d)", info, ranked.seed, SEED_STRIDE)
    return ranked, bool(published["finished"])
