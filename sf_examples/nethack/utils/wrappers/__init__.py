"""Gymnasium wrappers of the NetHack family, one per module (Sample Factory 2's layout)."""
