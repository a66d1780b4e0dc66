"""Helpers of the NetHack family: task scores, the character-cell renderer and the env wrappers."""
