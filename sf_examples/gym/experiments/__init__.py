"""Run descriptions for the launcher: ``python -m sample_factory.launcher.run --run=sf_examples.gym.experiments.X``."""
