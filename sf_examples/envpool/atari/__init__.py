"""EnvPool Atari (``envpool_atari_*``): ``python -m sf_examples.envpool.atari.train_envpool_atari``."""
