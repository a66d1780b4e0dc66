"""``Configurable``: the smallest base for objects that are built from the run's configuration."""

from __future__ import annotations

from sample_factory.utils.typing import Config


class Configurable:
    """Keeps the run's config as ``self.cfg``; a common base so components read their flags in one way.

    The config is shared, not copied: a change made by one component (e.g. a PBT update of a hyper-parameter) is
    seen by every other component holding the same object.
    """

    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg
