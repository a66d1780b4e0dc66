"""Wrappers of the DeepMind Lab envs."""
