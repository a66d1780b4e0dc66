"""Exact resume: the sampler's state travels in the learner's checkpoint (serial synchronous mode, one policy).

A run of N env steps resumed to 2N should end exactly where a straight run of 2N ends. Model, optimizer and
normalisers are in every checkpoint; what else differs after a resume is the sampler: envs in mid-episode, the last
observation and RNN state of each actor, episode counters and the random generators. In serial synchronous mode all
components share one process and sampling pauses while the learner trains, so at the end of a training step the
whole sampler is at rest: every split has finished its rollout and waits for slots. The learner then holds on to the
slots (so sampling does not start again) when the run has reached ``--train_for_env_steps``, and its final
checkpoint carries the state of every rollout worker plus the global torch/numpy/Python generator states.

A resumed run hands that state to the rollout workers before sampling begins. What a worker saves and how it
continues from it is ``sample_factory.algo.sampling.exact_resume``. When an env's state cannot be saved
as plain data (see ``sample_factory.envs.env_state``), or the layout of workers and envs changed, the resume works
as it does in parallel mode: the counters, model and normalisers continue, the episodes start afresh.
"""

from __future__ import annotations

from collections.abc import Callable

from sample_factory.envs.env_state import capture_global_rng_states, restore_global_rng_states
from sample_factory.utils.logging_setup import log
from sample_factory.utils.typing import Config


def exact_resume_supported(cfg: Config) -> bool:
    """Only serial synchronous single-policy runs are deterministic enough for the sampler state to matter."""
    return bool(cfg.serial_mode) and not cfg.async_rl and cfg.num_policies == 1


class SamplerStateExchange:
    """In-process meeting point of the rollout workers and the learner (serial mode only, never pickled)."""

    def __init__(self) -> None:
        self._providers: dict[int, Callable[[], dict | None]] = {}
        self._rest_checks: dict[str, Callable[[], bool]] = {}
        self._resume: dict | None = None
        self._rng_restored = False

    def register(self, worker_idx: int, provider: Callable[[], dict | None]) -> None:
        """``provider()`` returns the worker's state, or None when it is not at rest or cannot be saved."""
        self._providers[worker_idx] = provider

    def register_rest_check(self, name: str, at_rest: Callable[[], bool]) -> None:
        """``at_rest()`` is False while component ``name`` holds sampled data that no saved state would cover (a
        batcher with trajectories not yet batched): the sampler is then not at rest and is not captured."""
        self._rest_checks[name] = at_rest

    def capture(self) -> dict | None:
        """Every worker's state and the global generators, or None if the sampler is not at rest (a rest check
        fails) or any worker could not give its state."""
        if not all(at_rest() for at_rest in self._rest_checks.values()):
            return None
        workers = {}
        for worker_idx, provider in sorted(self._providers.items()):
            state = provider()
            if state is None:
                return None
            workers[worker_idx] = state
        if not workers:
            return None
        return {"workers": workers, "rng": capture_global_rng_states()}

    def offer(self, state: dict | None) -> None:
        """The ``sampler`` entry of the checkpoint the learner resumed from."""
        self._resume = state
        if state is not None:
            log.info("Checkpoint holds the sampler state: envs continue their episodes (exact resume)")

    def take_worker_state(self, worker_idx: int) -> dict | None:
        """This worker's saved state (once); also restores the global generators the first time it is called."""
        if self._resume is None:
            return None
        state = self._resume["workers"].pop(worker_idx, None)
        if state is not None and not self._rng_restored:
            restore_global_rng_states(self._resume["rng"])
            self._rng_restored = True
        return state
