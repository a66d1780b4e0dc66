"""Launcher run descriptions of the Brax family (``python -m sample_factory.launcher.run --run=...``)."""
