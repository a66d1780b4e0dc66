"""A dict whose keys can also be read and written as attributes.

Configs loaded from ``config.json`` and env configs are AttrDicts, so code can
treat them like the ``argparse.Namespace`` produced by the parser.
"""

from __future__ import annotations

from typing import Any


class AttrDict(dict):
    """``d.key`` is ``d["key"]``; nested plain dicts are converted on construction."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for key, value in self.items():
            if isinstance(value, dict) and not isinstance(value, AttrDict):
                self[key] = AttrDict(value)

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError as exc:
            raise AttributeError(f"no attribute or key {key!r}") from exc

    def __setattr__(self, key: str, value: Any) -> None:
        self[key] = value

    def __delattr__(self, key: str) -> None:
        try:
            del self[key]
        except KeyError as exc:
            raise AttributeError(key) from exc

    def __getstate__(self) -> dict:
        return dict(self)

    def __setstate__(self, state: dict) -> None:
        self.update(state)
