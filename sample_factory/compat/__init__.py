"""Every reach of this package into another library's private state, one module per library.

Each module here uses a private name of torch, multiprocessing, faster-fifo or glibc for a gain that was measured,
only on the versions it was verified on (``VERIFIED`` in each module), and falls back to the public path elsewhere,
saying so in one log line. ``SF_DISABLE_FAST_PATHS=all`` turns every one of them off. Nothing outside this package
touches those libraries' private names (``tests/compat/test_private_names.py`` enforces it); the inventory, with
what each buys, is in docs/architecture.md.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os

DISABLE_ENV = "SF_DISABLE_FAST_PATHS"
# the package's logger ("sf", configured by sample_factory.utils.logging_setup); compat sits below utils in the
# import graph, so it names the logger rather than importing it
log = logging.getLogger("sf")


def all_disabled() -> bool:
    """``SF_DISABLE_FAST_PATHS`` names ``all``: every private-API path is off, the public ones are used."""
    names = {name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",")}
    return "all" in names


def distribution_version(name: str) -> str | None:
    """The installed version of a distribution (``faster-fifo``), or None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
