"""Watch a trained policy: ``enjoy(cfg) -> (status, avg_reward)``.

The experiment's saved config.json is the starting point (flags typed now win), so the env and the model are
rebuilt exactly as they were trained. One env is created in this process; one policy controls every agent of
a multi-agent env. Episodes run until ``--max_num_episodes``, ``--max_num_frames`` or a full video
(``--video_frames``), with RNN states carried between steps and zeroed when an agent's episode ends.

``--push_to_hub --hf_repository=USER/REPO`` uploads the experiment to the Hugging Face Hub after the run
(:mod:`sample_factory.huggingface.push_to_hub`), with this run's video and episode rewards on its model card.

Rendering follows Gymnasium's contract: with ``render_mode="human"`` the env draws itself inside
``reset()``/``step()``; with ``--save_video`` (``render_mode="rgb_array"``) frames come from ``env.render()``
and are written to an MP4 in the experiment folder.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from sample_factory.algo.sampling.env_runner import make_action_converter
from sample_factory.algo.sampling.evaluation_episodes import (
    AgentPolicy,
    actor_sets,
    policies_step,
    single_policy,
    to_numpy,
)
from sample_factory.algo.utils.checkpoints import (
    CheckpointError,
    best_checkpoint_path,
    load_checkpoint_file,
    load_latest_checkpoint,
)
from sample_factory.algo.utils.policy_spaces import PolicySpaces
from sample_factory.cfg.arguments import load_from_checkpoint
from sample_factory.cfg.experiment_files import DEFAULT_VIDEO_NAME
from sample_factory.cfg.validation import unavailable_feature_problems, warn_about_hub_flags
from sample_factory.envs.create_env import create_env, make_env_config
from sample_factory.envs.env_contract import reset_env
from sample_factory.envs.env_info import EnvInfo, extract_env_info
from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.model.actor_critic import ActorCritic, create_actor_critic
from sample_factory.model.model_utils import get_rnn_size
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.gpu_utils import policy_device
from sample_factory.utils.logging_setup import log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.torch_utils import init_torch_runtime
from sample_factory.utils.typing import Config, PolicyID, StatusCode
from sample_factory.utils.utils import checkpoint_dir, experiment_dir

DEFAULT_TRAIN_SCRIPT = "sf_examples.train_gym_env"


class NoCheckpointError(RuntimeError):
    """The experiment has no config.json or no checkpoint for the policy; the message says how to train it."""


@dataclass
class EnjoyResults:
    """Finished episodes (per agent) and the env steps taken."""

    rewards: list[float] = field(default_factory=list)
    lengths: list[int] = field(default_factory=list)
    frames: int = 0


def enjoy(cfg: Config, results: EnjoyResults | None = None) -> tuple[StatusCode, float]:
    """Run the trained policy of ``cfg``'s experiment; returns the status and the average episode reward.

    The average is NaN when no episode finished within the limits. ``results``, when given, receives every
    finished episode. With ``--push_to_hub`` the experiment is uploaded to ``--hf_repository`` afterwards, with
    the video and rewards of this run (the status says whether the upload worked too).
    """
    refused = unavailable_feature_problems(cfg, uploads_to_hub=True)
    if refused:
        log.error("%s", "\n".join(refused))
        return ExperimentStatus.FAILURE, math.nan
    warn_about_hub_flags(cfg)
    try:
        cfg = load_from_checkpoint(cfg)
    except FileNotFoundError:
        log.error("%s", NoCheckpointError(_no_checkpoint_message(cfg, cfg.policy_index)))
        return ExperimentStatus.FAILURE, math.nan
    init_torch_runtime(cfg, max_num_threads=1)  # one env, small batches: more threads only add overhead
    results = EnjoyResults() if results is None else results
    try:
        status, avg_reward = _enjoy_loaded(cfg, results)
    except (NoCheckpointError, CheckpointError, UnknownEnvError, MissingDependencyError, ValueError) as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE, math.nan
    if status == ExperimentStatus.SUCCESS and cfg.push_to_hub:
        from sample_factory.huggingface.upload import push_after_enjoy  # optional feature, imported on use

        status = push_after_enjoy(cfg, results.rewards)
    return status, avg_reward


def _enjoy_loaded(cfg: AttrDict, results: EnjoyResults) -> tuple[StatusCode, float]:
    action_repeat = _apply_eval_frameskip(cfg)
    env = make_env(cfg, render_mode_for(cfg))
    video = VideoRecorder.for_cfg(cfg, env)
    status = ExperimentStatus.SUCCESS
    try:
        env_info = extract_env_info(env, cfg)
        policies, device = load_agent_policies(cfg, env_info)
        run_episodes(cfg, _as_multi_agent(env, env_info), env_info, policies, device, video, action_repeat, results)
    except KeyboardInterrupt:
        log.warning("Interrupted, reporting the episodes finished so far")
        status = ExperimentStatus.INTERRUPTED
    finally:
        if video is not None:
            video.close()
        env.close()
    return status, report_results(results)


# ---- configuration ---------------------------------------------------------------------------------------------


def make_env(cfg: Config, render_mode: str | None = None) -> Any:
    """The one env that ``enjoy`` (and ONNX export) evaluates on: ``--env`` made from ``cfg`` as instance 0.

    It is the env as its registered make function returns it (Gymnasium API, multi-agent envs included), with
    ``render_mode`` passed through: ``None`` (no rendering), ``"human"`` (a window) or ``"rgb_array"`` (frames
    from ``render()``); ``render_mode_for(cfg)`` picks the one ``enjoy`` uses. Call ``close()`` when done.
    """
    return create_env(cfg.env, cfg=cfg, env_config=make_env_config(0, 0, 0), render_mode=render_mode)


def render_mode_for(cfg: Config) -> str | None:
    """``rgb_array`` for videos, nothing for ``--no_render``, otherwise a window (``human``)."""
    if cfg.save_video:
        return "rgb_array"
    return None if cfg.no_render else "human"


def _apply_eval_frameskip(cfg: AttrDict) -> int:
    """Use ``--eval_env_frameskip`` for the env and repeat each action to keep the trained decision rate.

    E.g. trained with frameskip 4, watched with 1: every action is applied for 4 env frames, but all are shown.
    """
    eval_frameskip = cfg.eval_env_frameskip
    train_frameskip = max(1, int(cfg.env_frameskip or 1))
    if not eval_frameskip or eval_frameskip == train_frameskip:
        return 1
    if train_frameskip % eval_frameskip:
        raise ValueError(
            f"--eval_env_frameskip={eval_frameskip} must divide the training --env_frameskip={train_frameskip}"
        )
    cfg.env_frameskip = eval_frameskip
    return train_frameskip // eval_frameskip


def _no_checkpoint_message(cfg: Config, policy_id: PolicyID) -> str:
    train_script = cfg.train_script or DEFAULT_TRAIN_SCRIPT
    return (
        f"No checkpoint of policy {policy_id} in the experiment folder {experiment_dir(cfg, mkdir=False)} "
        f"(looked for config.json and {checkpoint_dir(cfg, policy_id, mkdir=False)}/checkpoint_*.pth). "
        f"Train it first: python -m {train_script} --env={cfg.env} --experiment={cfg.experiment} "
        f"--train_dir={cfg.train_dir}"
    )


# ---- model -----------------------------------------------------------------------------------------------------


def load_policy(
    cfg: AttrDict, env_info: EnvInfo, policy_id: PolicyID | None = None
) -> tuple[ActorCritic, torch.device]:
    """The actor-critic of ``policy_id`` (default ``--policy_index``) with its checkpointed weights, in eval mode.

    Its model is built for the policy's own spaces (those of the agents it acts for, when the env's agents differ).
    """
    policy_id = cfg.policy_index if policy_id is None else policy_id
    if not 0 <= policy_id < cfg.num_policies:
        raise ValueError(f"--policy_index={policy_id} is out of range: the experiment has {cfg.num_policies} policies")
    device = policy_device(cfg, policy_id)
    policy_info = PolicySpaces(cfg, env_info).env_info_of(policy_id)
    model = create_actor_critic(cfg, policy_info.obs_space, policy_info.action_space)
    _load_weights(cfg, policy_id, model, device)
    model.model_to_device(device)
    model.eval()
    return model, device


def load_state_dict(cfg: Config, actor_critic: ActorCritic, device: torch.device | str) -> None:
    """Put the checkpointed weights of ``--policy_index`` into ``actor_critic`` (``--load_checkpoint_kind``: the
    latest or the best checkpoint, mapped onto ``device``); :class:`NoCheckpointError` when there is none."""
    _load_weights(cfg, cfg.policy_index, actor_critic, torch.device(device))


def _load_weights(cfg: Config, policy_id: PolicyID, model: ActorCritic, device: torch.device) -> None:
    state = load_policy_state(cfg, policy_id, device)
    if state is None:
        raise NoCheckpointError(_no_checkpoint_message(cfg, policy_id))
    model.load_state_dict(state["model"])


def load_agent_policies(cfg: AttrDict, env_info: EnvInfo) -> tuple[list[AgentPolicy], torch.device]:
    """The policies that act in ``enjoy``: ``--policy_index`` for every agent, or, when the env's agents differ, one
    policy per kind of agent: ``--policy_index`` for the agents of its spaces, and for every other kind the first
    policy of that kind (with ``--agent_to_policy``, the policy each agent trained with)."""
    spaces = PolicySpaces(cfg, env_info)
    if not spaces.heterogeneous:
        model, device = load_policy(cfg, env_info)
        return single_policy(model), device
    chosen = []
    for group in range(spaces.num_groups):
        members = spaces.policies_of_group(group)
        policy_id = cfg.policy_index if cfg.policy_index in members else members[0]
        agents = [a for a in range(env_info.num_agents) if policy_id in spaces.agent_candidates[a]]
        model, device = load_policy(cfg, env_info, policy_id)
        log.info("Policy %d acts for agents %s", policy_id, agents)
        chosen.append(AgentPolicy(model, agents, make_action_converter(spaces.group_spaces(group)[1])))
    return chosen, device


def load_policy_state(cfg: Config, policy_id: PolicyID, device: torch.device) -> dict | None:
    """``--load_checkpoint_kind=best`` falls back to the latest checkpoint (with a warning) when there is no best."""
    if cfg.load_checkpoint_kind == "best":
        path = best_checkpoint_path(cfg, policy_id)
        if path is not None:
            log.info("Loading the best checkpoint %s", path)
            return load_checkpoint_file(path, device)
        log.warning(
            "--load_checkpoint_kind=best: no best_*.pth in %s, loading the latest checkpoint instead",
            checkpoint_dir(cfg, policy_id, mkdir=False),
        )
    return load_latest_checkpoint(cfg, policy_id, device)


# ---- env adapter -----------------------------------------------------------------------------------------------


class _SingleAgentAsMultiAgent:
    """Gives a single-agent env the multi-agent protocol (lists of one, auto-reset) so one loop serves both."""

    def __init__(self, env: Any) -> None:
        self.env = env

    def reset(self, seed: int | None = None) -> tuple[list, list[dict]]:
        obs, info = reset_env(self.env, seed)
        return [obs], [info]

    def step(self, actions: list) -> tuple[list, list, list, list, list]:
        obs, reward, terminated, truncated, info = self.env.step(actions[0])
        if terminated or truncated:
            obs, _ = self.env.reset()
        return [obs], [reward], [terminated], [truncated], [info]

    def render(self) -> Any:
        return self.env.render()


def _as_multi_agent(env: Any, env_info: EnvInfo) -> Any:
    return env if env_info.is_multiagent else _SingleAgentAsMultiAgent(env)


# ---- episodes --------------------------------------------------------------------------------------------------


class _EpisodeTracker:
    """Per-agent running reward and length; finished episodes are printed and collected."""

    def __init__(self, num_agents: int, results: EnjoyResults) -> None:
        self.reward = np.zeros(num_agents, dtype=np.float64)
        self.length = np.zeros(num_agents, dtype=np.int64)
        self.results = results
        self.multiagent = num_agents > 1

    def add(self, rewards: np.ndarray) -> None:
        self.reward += rewards
        self.length += 1

    def finish(self, dones: np.ndarray) -> None:
        for agent in np.flatnonzero(dones):
            suffix = f", agent={agent}" if self.multiagent else ""
            log.info("Episode finished: reward=%.3f, length=%d%s", self.reward[agent], self.length[agent], suffix)
            self.results.rewards.append(float(self.reward[agent]))
            self.results.lengths.append(int(self.length[agent]))
            self.reward[agent], self.length[agent] = 0.0, 0


def run_episodes(
    cfg: AttrDict,
    env: Any,
    env_info: EnvInfo,
    policies: list[AgentPolicy],
    device: torch.device,
    video: VideoRecorder | None,
    action_repeat: int,
    results: EnjoyResults,
) -> None:
    """The evaluation loop; fills ``results`` as it goes so an interrupted run still reports what it saw."""
    num_agents = env_info.num_agents
    tracker = _EpisodeTracker(num_agents, results)
    throttle = _FrameThrottle(cfg.fps if render_mode_for(cfg) == "human" else 0)
    obs, _ = reset_env(env, cfg.seed)
    _record(video, env)
    rnn_states = torch.zeros(num_agents, get_rnn_size(cfg), device=device)
    sets = actor_sets(policies, num_agents, num_agents)
    while not _should_stop(cfg, results, video):
        env_actions = policies_step(policies, sets, obs, rnn_states, device, cfg.eval_deterministic)
        obs, dones = _repeat_action(env, env_actions, action_repeat, tracker, results, video, throttle)
        if dones.any():
            rnn_states[torch.from_numpy(dones).to(device)] = 0.0
            tracker.finish(dones)


def _repeat_action(
    env: Any,
    actions: list,
    repeat: int,
    tracker: _EpisodeTracker,
    results: EnjoyResults,
    video: VideoRecorder | None,
    throttle: _FrameThrottle,
) -> tuple[Any, np.ndarray]:
    """Apply the actions ``repeat`` times, stopping early at the end of any agent's episode."""
    for _ in range(repeat):
        obs, rewards, terminated, truncated, _ = env.step(actions)
        results.frames += 1
        tracker.add(to_numpy(rewards).astype(np.float64).reshape(-1))
        dones = to_numpy(terminated).astype(bool).reshape(-1) | to_numpy(truncated).astype(bool).reshape(-1)
        _record(video, env)
        throttle.wait()
        if dones.any():
            break
    return obs, dones


def _should_stop(cfg: AttrDict, results: EnjoyResults, video: VideoRecorder | None) -> bool:
    return (
        len(results.rewards) >= cfg.max_num_episodes
        or results.frames >= cfg.max_num_frames
        or (video is not None and video.full())
    )


def _record(video: VideoRecorder | None, env: Any) -> None:
    if video is not None and not video.full():
        video.add(env.render())


class _FrameThrottle:
    """Sleeps so that frames are shown at most ``fps`` times per second (0: as fast as possible)."""

    def __init__(self, fps: int) -> None:
        self.period = 1.0 / fps if fps and fps > 0 else 0.0
        self.next_time = time.monotonic()

    def wait(self) -> None:
        if not self.period:
            return
        self.next_time += self.period
        delay = self.next_time - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        else:
            self.next_time = time.monotonic()  # running late: do not try to catch up with a burst of frames


def render_frame(cfg: Config, env: Any, video_frames: list, num_episodes: int, last_render_start: float) -> float:
    """One frame of a hand-written play loop; returns when this render started (pass it back next time).

    With ``--save_video`` a copy of ``env.render()`` goes to ``video_frames`` until ``--video_frames`` are there (a
    negative ``--video_frames``: the frames of the first episode, ``num_episodes == 0``). Otherwise, unless
    ``--no_render``, it waits so that frames come at most ``--fps`` per second, then calls ``env.render()``.
    """
    started = time.time()
    if cfg.save_video:
        wanted = len(video_frames) < cfg.video_frames if cfg.video_frames >= 0 else num_episodes == 0
        frame = env.render() if wanted else None
        if frame is not None:
            video_frames.append(np.array(to_numpy(frame), copy=True))
    elif not cfg.no_render:
        delay = (1.0 / cfg.fps if cfg.fps and cfg.fps > 0 else 0.0) - (started - last_render_start)
        if delay > 0:
            time.sleep(delay)
        started = time.time()
        env.render()
    return started


def visualize_policy_inputs(normalized_obs: dict[str, torch.Tensor]) -> None:
    """Show the image the policy sees (key ``obs`` of the first actor, after normalisation) in an OpenCV window
    named ``policy inputs``, to check a preprocessing pipeline; observations that are not images are skipped."""
    image = policy_input_image(normalized_obs)
    if image is None:
        return
    import cv2  # optional dependency, needed only to show images

    cv2.imshow("policy inputs", cv2.cvtColor(image, cv2.COLOR_RGB2BGR) if image.shape[2] == 3 else image)
    cv2.waitKey(1)


def policy_input_image(normalized_obs: dict[str, torch.Tensor]) -> np.ndarray | None:
    """The first actor's ``obs`` as an ``H x W x C`` uint8 image stretched to 0..255, None when it is not an image
    (a batch of ``C x H x W`` with 1, 3 or 4 channels)."""
    obs = normalized_obs.get("obs") if isinstance(normalized_obs, dict) else None
    if obs is None or np.ndim(obs) != 4 or obs.shape[1] not in (1, 3, 4):
        return None
    chw = to_numpy(obs[0]).astype(np.float32)
    low, high = float(chw.min()), float(chw.max())
    scaled = (chw - low) * (255.0 / (high - low)) if high > low else np.zeros_like(chw)
    return np.ascontiguousarray(np.moveaxis(scaled.astype(np.uint8), 0, -1))


def report_results(results: EnjoyResults) -> float:
    """Log the averages; returns the average episode reward (NaN if none finished)."""
    if not results.rewards:
        log.warning(
            "No episode finished within the limits (%d env steps); raise --max_num_frames or --video_frames",
            results.frames,
        )
        return math.nan
    avg_reward = float(np.mean(results.rewards))
    log.info("Avg episode reward: %.3f", avg_reward)
    log.info("Avg episode length: %.1f", float(np.mean(results.lengths)))
    return avg_reward


# ---- video -----------------------------------------------------------------------------------------------------


class VideoRecorder:
    """Writes RGB frames to an MP4 (OpenCV, 'mp4v'); the writer opens on the first frame, when the size is known."""

    def __init__(self, path: str, fps: float, max_frames: int) -> None:
        self.path = path
        self.fps = fps
        self.max_frames = int(max_frames)
        self.num_frames = 0
        self._writer = None
        self._warned = False
        self._failed = False  # the writer could not open the file: nothing is recorded

    @classmethod
    def for_cfg(cls, cfg: AttrDict, env: Any) -> VideoRecorder | None:
        if not cfg.save_video:
            return None
        path = os.path.join(experiment_dir(cfg), cfg.video_name or DEFAULT_VIDEO_NAME)
        fps = cfg.fps if cfg.fps and cfg.fps > 0 else getattr(env, "metadata", {}).get("render_fps") or 30
        return cls(path, fps, cfg.video_frames)

    def full(self) -> bool:
        """True once ``--video_frames`` are recorded, or when the file cannot be written (the run then ends)."""
        return self._failed or self.num_frames >= self.max_frames

    def add(self, frame: np.ndarray | None) -> None:
        if self._failed:
            return
        if frame is None:
            if not self._warned:
                log.warning("The env returned no frame from render() in rgb_array mode: nothing to record")
                self._warned = True
            return
        import cv2  # optional dependency, needed only for videos

        frame = np.ascontiguousarray(to_numpy(frame).astype(np.uint8))
        if self._writer is None and not self._open(cv2, frame):
            return
        self._writer.write(cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
        self.num_frames += 1

    def _open(self, cv2: Any, frame: np.ndarray) -> bool:
        """Create the writer (and the folders of ``--video_name``); OpenCV does not raise when it cannot write."""
        height, width = frame.shape[:2]
        folder = os.path.dirname(self.path)
        try:
            if folder:
                os.makedirs(folder, exist_ok=True)
        except OSError as exc:
            return self._fail(f"cannot create the folder {folder} ({exc.strerror or exc})")
        writer = cv2.VideoWriter(self.path, cv2.VideoWriter_fourcc(*"mp4v"), float(self.fps), (width, height))
        if not writer.isOpened():
            writer.release()
            return self._fail("OpenCV cannot open it for writing (check the path, permissions and the mp4v codec)")
        self._writer = writer
        return True

    def _fail(self, reason: str) -> bool:
        log.error("No video recorded: %s: %s. Pass --video_name=<a writable file name>", self.path, reason)
        self._failed = True
        return False

    def close(self) -> None:
        if self._writer is not None:
            self._writer.release()
            log.info("Saved a video of %d frames to %s", self.num_frames, self.path)
            self._writer = None
