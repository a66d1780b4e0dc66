"""Wrappers for one scenario each."""
