"""A small CartPole config for the sampler tests (2 workers x 2 envs, short rollouts), and one rollout worker on an
in-process event loop."""

from __future__ import annotations

import queue

from sample_factory.algo.runners.setup import obtain_env_info
from sample_factory.algo.sampling.rollout_worker import RolloutWorker
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.algo.utils.restart_info import RestartInfo
from sample_factory.algo.utils.shared_buffers import SlotOwners, TrajectoryBuffers, allocate_trajectories
from sample_factory.messaging.event_loop import EventLoop, LocalInbox, Router
from sf_examples.train_gym_env import parse_gym_args, register_env_from_cfg

ROLLOUT = 8
WORKER = "rollout_w0"


def cartpole_sampling_cfg(tmp_path, experiment: str, *extra: str):
    """The parsed config with CartPole registered, as a user's sampling script would have it."""
    cfg = parse_gym_args(
        [
            "--env=CartPole-v1",
            "--device=cpu",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            f"--rollout={ROLLOUT}",
            f"--train_dir={tmp_path}",
            f"--experiment={experiment}",
            *extra,
        ]
    )
    register_env_from_cfg(cfg)
    return cfg


class OneWorkerLoop:
    """One worker, two splits of one CartPole env each, and exactly one slot per actor: a finished split must wait."""

    def __init__(self, tmp_path, inbox, restart: RestartInfo | None = None) -> None:
        cfg = cartpole_sampling_cfg(tmp_path, "wake", "--num_workers=1", "--num_envs_per_worker=2")
        env_info = obtain_env_info(cfg)
        self.traj = allocate_trajectories(cfg, env_info, 2, share=False)
        others = {"inference_p0_w0": "rest", "batcher_p0": "rest", "runner": "rest"}
        self.router = Router({WORKER: "w", **others}, {"w": inbox, "rest": LocalInbox()})
        self.loop = EventLoop("w", inbox, self.router, idle_timeout=30.0)  # a wait for messages would be long
        self.worker = RolloutWorker(
            cfg,
            env_info,
            0,
            self.router,
            TrajectoryBuffers([self.traj], PolicySpaces(cfg, env_info)),
            SlotOwners(2, 1, 2),
            restart=restart,
        )
        self.loop.add_component(self.worker)
        self.loop.start_components()
        self.sent()  # start-up reports to the runner

    def sent(self) -> list:
        """What the worker sent to the other loop since the last call."""
        try:
            return self.router.inboxes["rest"].get_many(block=False)
        except queue.Empty:
            return []

    def finish_rollouts(self, splits: list[int]) -> None:
        """Play the inference worker (actions stay 0) until ``splits`` complete their rollout."""
        for _ in range(ROLLOUT):
            self.router.deliver("w", (WORKER, "on_actions_ready", (splits,)))
            self.loop.run_once()

    def close(self) -> None:
        self.loop.stop_components()
