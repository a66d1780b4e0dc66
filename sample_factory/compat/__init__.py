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


# one switch per module of this package: SF_DISABLE_FAST_PATHS=torch_internals turns that module's private paths off
MODULES = (
    "torch_internals", "multiprocessing_internals", "faster_fifo_internals", "glibc_internals", "python_internals",
)  # fmt: skip


def all_disabled() -> bool:
    """``SF_DISABLE_FAST_PATHS`` names ``all``: every private-API path is off, the public ones are used."""
    return "all" in _switched()


def disabled(module: str) -> str | None:
    """The switch that turns ``module``'s private paths off (``SF_DISABLE_FAST_PATHS=all`` or ``=<module>``, so
    each can be measured against its public path), or None."""
    names = _switched()
    for name in ("all", module):
        if name in names:
            return f"{DISABLE_ENV}={name}"
    return None


def _switched() -> set[str]:
    return {name.strip() for name in os.environ.get(DISABLE_ENV, "").split(",")}


def distribution_version(name: str) -> str | None:
    """The installed version of a distribution (``faster-fifo``), or None when it is not installed."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None
