"""EnvPool MuJoCo (``envpool_mujoco_*``): ``python -m sf_examples.envpool.mujoco.train_envpool_mujoco``."""
