"""Brax (jax) physics envs: ``python -m sf_examples.brax.train_brax --env=ant``; see docs/brax.md."""
