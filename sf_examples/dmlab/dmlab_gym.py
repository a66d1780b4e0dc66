"""DeepMind Lab's Gymnasium env under Sample Factory 2's constructor (task id, level, resolution, renderer, ...).

The env itself is :class:`sf_examples.dmlab.dmlab_env.DmlabGymEnv`; this module only maps the parameters onto it and
builds the simulator factory. ``lab_factory`` (keyword only) replaces the simulator, e.g. with a scripted lab.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sf_examples.dmlab import dmlab_env
from sf_examples.dmlab.dmlab30 import LEVEL_DIR
from sf_examples.dmlab.dmlab_env import ACTION_SET, EXTENDED_ACTION_SET, LabFactory, make_lab
from sf_examples.dmlab.dmlab_level_cache import DmlabLevelCache

BENCHMARK_SEED = 42  # benchmark mode: every episode on this one map, so runs measure the same work


def dmlab_level_to_level_name(level: str) -> str:
    """A DMLab-30 level path without its folder (``contributed/dmlab30/rooms_watermaze`` -> ``rooms_watermaze``)."""
    return level[len(LEVEL_DIR) :] if level.startswith(LEVEL_DIR) else level


class DmlabGymEnv(dmlab_env.DmlabGymEnv):
    """One DeepMind Lab level, configured the way Sample Factory 2's constructor takes it.

    ``task_id`` picks the policy's level cache from ``dmlab_level_caches_per_policy`` (else one over
    ``level_cache_path``); ``action_repeat`` is the frameskip; ``benchmark_mode`` replays one fixed map.
    """

    def __init__(
        self,
        task_id: int,
        level: str,
        action_repeat: int = 4,
        res_w: int = 96,
        res_h: int = 72,
        benchmark_mode: bool = False,
        renderer: str = "software",
        dataset_path: str | None = None,
        with_instructions: bool = False,
        extended_action_set: bool = False,
        level_cache_path: str | None = None,
        gpu_index: int | None = None,
        dmlab_level_caches_per_policy: Sequence[DmlabLevelCache] | None = None,
        extra_cfg: dict[str, Any] | None = None,
        render_mode: str | None = None,
        *,
        lab_factory: LabFactory | None = None,
    ) -> None:
        self.task_id = task_id
        cache = None
        if dmlab_level_caches_per_policy:
            cache = dmlab_level_caches_per_policy[task_id % len(dmlab_level_caches_per_policy)]
        elif level_cache_path:
            cache = DmlabLevelCache(level_cache_path)
        if lab_factory is None:
            lab_factory = make_lab(
                res_w, res_h, renderer, None, cache=cache, with_instructions=with_instructions,
                dataset_path=dataset_path, gpu_index=gpu_index, extra_cfg=extra_cfg,
            )  # fmt: skip
        super().__init__(
            dmlab_level_to_level_name(level),
            lab_factory,
            width=res_w,
            height=res_h,
            frameskip=action_repeat,
            render_mode=render_mode,
            actions=EXTENDED_ACTION_SET if extended_action_set else ACTION_SET,
            with_instructions=with_instructions,
            fixed_seed=BENCHMARK_SEED if benchmark_mode else None,
            level_cache=cache,
        )
