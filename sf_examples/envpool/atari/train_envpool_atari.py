"""Train on Atari games simulated by EnvPool, stepped by the batched sampler.

    python -m sf_examples.envpool.atari.train_envpool_atari --env=envpool_atari_breakout --experiment=breakout
    python -m sf_examples.envpool.atari.train_envpool_atari --env=atari_breakout ...   # Sample Factory 2's name

Each rollout worker holds one EnvPool instance of ``--env_agents`` games (``--num_envs_per_worker=1``,
``--batched_sampling=True``). Env names: ``envpool_atari_<game>`` for the 57 games of ``ATARI_57``
(``envpool_atari_montezuma`` for Montezuma's Revenge). See ``docs/envpool.md``.
"""

from __future__ import annotations

from sample_factory.utils.processes import exit_process
from sf_examples.envpool.envpool_family import ENVPOOL_ATARI as SCRIPTS

# register_envpool_atari_envs(env_name=None): every envpool_atari_* name (without envpool: one error line, at once);
# parse_envpool_atari_cfg(argv=None, evaluation=False) -> cfg. The last name of each is Sample Factory 2's; the family
# name is the hook of generic tools (sf_examples/families.py).
register_envpool_atari_envs = register_envpool_atari_family = register_atari_components = SCRIPTS.register_envs
register_atari_envs = SCRIPTS.register_envs
parse_envpool_atari_cfg = parse_atari_args = SCRIPTS.parse_cfg
main = SCRIPTS.run  # main() -> StatusCode: parse, check the env name and envpool, register, train

if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
