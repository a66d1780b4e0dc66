"""Launcher run descriptions: ``python -m sample_factory.launcher.run --run=sf_examples.mujoco.experiments.X``."""
