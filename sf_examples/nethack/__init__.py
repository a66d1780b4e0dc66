"""The NetHack family: ``nethack_*`` envs on the NetHack Learning Environment.

Install with ``pip install "sample-factory[nethack]"``. Every module imports without ``nle``; creating an env or
running a script without it fails with that install command.
"""
