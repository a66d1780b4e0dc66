"""VizDoom env family (``doom_*`` envs): ``python -m sf_examples.vizdoom.train_vizdoom --env=doom_basic``."""
