"""Reading a flag by name from a config (an ``argparse.Namespace`` or an ``AttrDict``), with no silent fallback.

A config is complete: parsing gives every declared flag a value, and an older ``config.json`` gets today's defaults
for the flags it lacks (``cfg.config_io.merge_saved_cfg``, with a log line each). So a missing flag is a bug to
report with its name, never something to paper over with a default that may disagree with the declared one.
"""

from __future__ import annotations

from typing import Any

from sample_factory.utils.typing import Config


def flag_value(cfg: Config, name: str) -> Any:
    """The value of flag ``name``; KeyError naming the flag when the config lacks it."""
    values = cfg if isinstance(cfg, dict) else vars(cfg)
    if name not in values:
        raise KeyError(
            f"the config has no flag {name!r}: build configs with the parser (parse_sf_args + parse_full_cfg, or "
            f"default_cfg), which gives every flag its value"
        )
    return values[name]
