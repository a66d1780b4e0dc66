"""The learner worker trains on the batch its batcher names and hands it back by message, with the frame count."""

from __future__ import annotations

from unittest import mock

import gymnasium as gym
import numpy as np
import torch

from sample_factory.algo.learning.batch_buffers import LearnerLink, TrainingBatches, batch_placement
from sample_factory.algo.learning.learner_worker import LearnerWorker
from sample_factory.algo.runners.components import PolicyWiring
from sample_factory.algo.utils.sampler_state import SamplerStateExchange
from sample_factory.algo.utils.wiring import RUNNER
from sample_factory.cfg.arguments import default_cfg
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router


class StubLearner:
    """Stands in for ``Learner`` after ``init()``: records what it was given to prepare."""

    device = torch.device("cpu")
    policy_version = 3
    train_step = 0

    def __init__(self) -> None:
        self.prepared: list = []
        self.actor_critic = mock.Mock()

    def prepare_batch(self, batch):
        self.prepared.append(batch)
        return ("prepared", len(self.prepared))

    def train(self, prepared) -> dict:
        return {"trained_on": prepared[1]}


def _worker(sampler_states: SamplerStateExchange | None = None, train_for_env_steps: int = 10**9):
    cfg = default_cfg(env="x")
    cfg.rollout, cfg.batch_size, cfg.num_batches_per_epoch, cfg.num_batches_to_accumulate = 4, 8, 1, 2
    cfg.train_for_env_steps = train_for_env_steps
    info = EnvInfo(gym.spaces.Box(-1, 1, (2,), np.float32), gym.spaces.Discrete(2), num_agents=1)
    router = Router(
        {"batcher_p0": "main", "learner_p0": "main", RUNNER: "r"}, {"main": LocalInbox(), "r": LocalInbox()}
    )
    loop = EventLoop("main", router.inboxes["main"], router)
    batches = TrainingBatches(cfg, info, batch_placement("cpu"))
    link = LearnerLink(PolicyWiring(0, info, None, None, mock.Mock()), batches, sampler_states)
    worker = LearnerWorker(cfg, link, router, serial=True)
    loop.add_component(worker)
    worker.learner = StubLearner()  # what on_start would have built
    return worker, loop, router.inboxes["r"]


def test_a_ready_batch_is_trained_on_in_place_and_handed_back_with_the_frame_count() -> None:
    worker, loop, runner_inbox = _worker()
    worker.resumed_env_steps = 1000  # the checkpoint it resumed from had counted these
    worker.on_batch_ready(1, 512)
    assert len(worker.learner.prepared) == 1 and worker.learner.prepared[0] is worker.batches[1]
    assert list(loop.local_messages) == [("batcher_p0", "on_training_done", (1, True))]
    reports = [args for _, slot, args in runner_inbox.get_many() if slot == "on_train_stats"]
    assert len(reports) == 1
    policy_id, stats, env_steps, trained = reports[0]
    assert (policy_id, stats["trained_on"], env_steps, trained) == (0, 1, 1512, True)
    assert worker.env_steps == 1512 and worker.samples_trained == 8


def test_exact_resume_keeps_the_last_batchs_slots_once_the_target_is_reached() -> None:
    worker, loop, _ = _worker(SamplerStateExchange(), train_for_env_steps=1024)
    worker.on_batch_ready(0, 512)
    worker.on_batch_ready(1, 1024)
    assert list(loop.local_messages) == [
        ("batcher_p0", "on_training_done", (0, True)),
        ("batcher_p0", "on_training_done", (1, False)),  # the sampler stays at rest for the final checkpoint
    ]


def test_a_stopping_learner_hands_batches_back_untrained() -> None:
    worker, loop, _ = _worker()
    worker.stopping = True
    worker.on_batch_ready(0, 64)
    assert worker.learner.prepared == []
    assert list(loop.local_messages) == [("batcher_p0", "on_training_done", (0, True))]
