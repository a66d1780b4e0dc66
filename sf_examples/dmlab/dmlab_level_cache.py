"""DeepMind Lab's level cache (``--dmlab_level_cache_path``): compiled maps kept on disk between runs.

DeepMind Lab compiles a level's map into a ``.pk3`` file on every episode start of procedurally generated levels,
which costs seconds. ``deepmind_lab.Lab(..., level_cache=cache)`` first asks ``cache.fetch(key, pk3_path)`` to
provide the file, and after compiling calls ``cache.write(key, pk3_path)``. This cache is a folder of such files
shared by every env and every run that point at it; writes go through a temporary file and an atomic rename, so
concurrent workers never read a half-written map.
"""

from __future__ import annotations

import os
import shutil
import tempfile


class DmlabLevelCache:
    """``fetch``/``write`` as DeepMind Lab's ``level_cache`` protocol expects, over the folder ``cache_dir``."""

    def __init__(self, cache_dir: str) -> None:
        self.cache_dir = os.path.abspath(os.path.expanduser(cache_dir))
        os.makedirs(self.cache_dir, exist_ok=True)

    def _path(self, key: str) -> str:
        if not key or os.sep in key or key in (".", ".."):
            raise ValueError(f"DeepMind Lab level cache key {key!r} is not a plain file name")
        return os.path.join(self.cache_dir, key)

    def fetch(self, key: str, pk3_path: str) -> bool:
        """Copy the cached map to ``pk3_path``; False when it is not cached (DeepMind Lab then compiles it)."""
        path = self._path(key)
        if not os.path.isfile(path):
            return False
        shutil.copyfile(path, pk3_path)
        return True

    def write(self, key: str, pk3_path: str) -> None:
        """Store a freshly compiled map; an entry that exists already is left as it is."""
        path = self._path(key)
        if os.path.isfile(path):
            return
        fd, tmp = tempfile.mkstemp(dir=self.cache_dir, prefix=f".{key}.", suffix=".tmp")
        os.close(fd)
        try:
            shutil.copyfile(pk3_path, tmp)
            os.replace(tmp, path)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)
