"""Train on MuJoCo tasks simulated by EnvPool, stepped by the batched sampler.

    python -m sf_examples.envpool.mujoco.train_envpool_mujoco --env=envpool_mujoco_halfcheetah --experiment=cheetah
    python -m sf_examples.envpool.mujoco.train_envpool_mujoco --env=mujoco_halfcheetah ...   # Sample Factory 2's name

Each rollout worker holds one EnvPool instance of ``--env_agents`` copies of the task (``--num_envs_per_worker=1``,
``--batched_sampling=True``). Env names: ``envpool_mujoco_<task>`` for the tasks of ``ENVPOOL_MUJOCO_ENVS``. See
``docs/envpool.md``.
"""

from __future__ import annotations

from sample_factory.utils.processes import exit_process
from sf_examples.envpool.envpool_family import ENVPOOL_MUJOCO as SCRIPTS

# register_envpool_mujoco_envs(env_name=None): every envpool_mujoco_* name (without envpool: one error line, at once);
# parse_envpool_mujoco_cfg(argv=None, evaluation=False) -> cfg. The last name of each is Sample Factory 2's; the family
# name is the hook of generic tools (sf_examples/families.py).
register_envpool_mujoco_envs = register_envpool_mujoco_family = register_mujoco_components = SCRIPTS.register_envs
parse_envpool_mujoco_cfg = parse_mujoco_cfg = SCRIPTS.parse_cfg
main = SCRIPTS.run  # main() -> StatusCode: parse, check the env name and envpool, register, train

if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
