"""DeepMind Lab's level cache (``--dmlab_level_cache_path``): compiled maps kept on disk between runs.

DeepMind Lab compiles a level's map into a ``.pk3`` file on every episode start of procedurally generated levels,
which costs seconds. ``deepmind_lab.Lab(..., level_cache=cache)`` first asks ``cache.fetch(key, pk3_path)`` to
provide the file, and after compiling calls ``cache.write(key, pk3_path)``. This cache is a folder of such files
shared by every env and every run that point at it; writes go through a temporary file and an atomic rename, so
concurrent workers never read a half-written map.

Beside the maps, ``seeds/<level>.seeds`` lists which seed of a level produced which cached map (``key seed`` lines),
and with an ``experiment_dir`` each policy records the seeds it has played, so an env can start an episode on a map
that is cached and that its policy has not seen yet (:meth:`DmlabLevelCache.get_unused_seed`).
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections.abc import Sequence
from typing import Any

SEEDS_SUFFIX = ".seeds"
_PATH_SEPARATOR = "__"  # "/" of a level path in a file name


def level_to_filename(level: str) -> str:
    """The seeds file name of a level path (``contributed/dmlab30/x`` -> ``contributed__dmlab30__x.seeds``)."""
    return level.replace("/", _PATH_SEPARATOR) + SEEDS_SUFFIX


def filename_to_level(filename: str) -> str:
    """The level path of a seeds file name or path (the inverse of :func:`level_to_filename`)."""
    name = os.path.basename(filename)
    if not name.endswith(SEEDS_SUFFIX):
        raise ValueError(f"{filename!r} is not a level seeds file (names end with {SEEDS_SUFFIX})")
    return name[: -len(SEEDS_SUFFIX)].replace(_PATH_SEPARATOR, "/")


def read_seeds_file(filename: str, has_keys: bool) -> list[int]:
    """The seeds listed in ``filename``: ``key seed`` lines with ``has_keys``, else one seed a line; [] if absent."""
    if not os.path.isfile(filename):
        return []
    seeds = []
    with open(filename) as f:
        for line_no, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != (2 if has_keys else 1):
                layout = "'key seed'" if has_keys else "one seed"
                raise ValueError(f"{filename}:{line_no}: expected {layout} per line, got {line.strip()!r}")
            seeds.append(int(fields[-1]))
    return seeds


def _append_line(filename: str, line: str) -> None:
    os.makedirs(os.path.dirname(filename), exist_ok=True)
    with open(filename, "a") as f:  # one short write per line: concurrent appends do not interleave
        f.write(line + "\n")


class DmlabLevelCache:
    """``fetch``/``write`` as DeepMind Lab's ``level_cache`` protocol expects, over the folder ``cache_dir``.

    ``experiment_dir`` and ``policy_idx`` say where the seeds played by one policy are recorded;
    ``all_levels_for_experiment`` are the levels whose cached seeds are read at start. State is shared between
    processes through files, so ``mp_ctx`` (a multiprocessing context elsewhere) is accepted and not needed.
    """

    def __init__(
        self,
        cache_dir: str,
        experiment_dir: str | None = None,
        all_levels_for_experiment: Sequence[str] = (),
        policy_idx: int = 0,
        mp_ctx: Any = None,
    ) -> None:
        del mp_ctx
        self.cache_dir = os.path.abspath(os.path.expanduser(cache_dir))
        os.makedirs(self.cache_dir, exist_ok=True)
        self.policy_idx = policy_idx
        self.used_dir = (
            None if experiment_dir is None else os.path.join(experiment_dir, "dmlab_used_seeds", f"policy_{policy_idx}")
        )
        self.all_levels = list(all_levels_for_experiment)
        self.cached_seeds = {level: read_seeds_file(self.seeds_path(level), has_keys=True) for level in self.all_levels}
        self.pending: tuple[str, int] | None = None  # (level, seed) of the reset in progress

    def seeds_path(self, level: str) -> str:
        return os.path.join(self.cache_dir, "seeds", level_to_filename(level))

    def used_path(self, level: str) -> str | None:
        return None if self.used_dir is None else os.path.join(self.used_dir, level_to_filename(level))

    def begin_reset(self, level: str, seed: int) -> None:
        """Say which level and seed the next compiled map belongs to (called by the env before ``lab.reset``)."""
        self.pending = (level, int(seed))

    def get_unused_seed(self, level: str, rng: random.Random | None = None) -> int | None:
        """A seed whose map is cached and that this policy has not played yet (recorded as played); None if none."""
        used_path = self.used_path(level)
        used = set(read_seeds_file(used_path, has_keys=False)) if used_path else set()
        candidates = [seed for seed in self.cached_seeds.get(level, ()) if seed not in used]
        if not candidates:  # other processes may have cached maps since this view last read the seeds file
            self.cached_seeds[level] = read_seeds_file(self.seeds_path(level), has_keys=True)
            candidates = [seed for seed in self.cached_seeds[level] if seed not in used]
        if not candidates:
            return None
        seed = (rng or random).choice(candidates)
        if used_path:
            _append_line(used_path, str(seed))
        return seed

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
        if self.pending is not None:
            level, seed = self.pending
            _append_line(self.seeds_path(level), f"{key} {seed}")
            self.cached_seeds.setdefault(level, []).append(seed)


def make_dmlab_caches(
    experiment_dir: str,
    all_levels_for_experiment: Sequence[str],
    num_policies: int,
    level_cache_dir: str,
    mp_ctx: Any = None,
) -> list[DmlabLevelCache]:
    """One cache view per policy over the shared folder ``level_cache_dir`` (each records its own played seeds)."""
    return [
        DmlabLevelCache(level_cache_dir, experiment_dir, all_levels_for_experiment, policy_idx, mp_ctx)
        for policy_idx in range(num_policies)
    ]
