"""Fill the DeepMind Lab level cache before training: play a few steps of many seeds of each level of an env.

    python -m sf_examples.dmlab.dmlab_populate_cache --env=dmlab_30 --num_seeds=100 \
        --dmlab_level_cache_path=~/.cache/sample_factory/dmlab_level_cache

Compiling a procedurally generated map takes seconds; a run whose maps are all cached starts episodes at once.
Needs the ``deepmind_lab`` module (built from source, see docs/dmlab.md).
"""

from __future__ import annotations

import argparse
import sys

from sample_factory.envs.env_utils import MissingDependencyError
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import StatusCode
from sample_factory.utils.utils import log
from sf_examples.dmlab.dmlab_env import DMLAB_ENVS, dmlab_env_by_name, import_deepmind_lab, make_dmlab_env_impl


def populate(env_name: str, num_seeds: int, cache_path: str) -> int:
    """Reset one env of each level of ``env_name`` on ``num_seeds`` seeds; returns the number of resets."""
    spec = dmlab_env_by_name(env_name)
    cfg = AttrDict(dmlab_level_cache_path=cache_path, dmlab_width=96, dmlab_height=72, env_frameskip=4)
    resets = 0
    for task_id, level in enumerate(spec.levels):
        env = make_dmlab_env_impl(spec, cfg, AttrDict(env_id=task_id, worker_index=0))
        try:
            for seed in range(num_seeds):
                env.reset(seed=seed)
                resets += 1
            log.info("cached %d maps of %s", num_seeds, level)
        finally:
            env.close()
    return resets


def main() -> StatusCode:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", default="dmlab_30", choices=sorted(DMLAB_ENVS), help="Env whose levels to cache.")
    parser.add_argument("--num_seeds", type=int, default=100, help="Maps (seeds) to compile per level.")
    parser.add_argument("--dmlab_level_cache_path", required=True, help="Cache folder (the training flag's value).")
    args = parser.parse_args()
    try:
        import_deepmind_lab()
    except MissingDependencyError as exc:
        log.error("%s", exc)
        return 1
    populate(args.env, args.num_seeds, args.dmlab_level_cache_path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
