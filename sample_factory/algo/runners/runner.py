"""Runner: the object a training script drives (``make_runner(cfg)`` returns one; ``init()``, ``run()``).

User code extends training through it without subclassing anything: ``register_observer(AlgoObserver)`` for
hooks at fixed moments of the run, ``register_episodic_stats_handler(fn)`` for every finished episode. The
parallel and serial runners subclass it and differ only in where the other components live (own processes vs.
one loop). The state of the run (readiness, stats, stop conditions) is owned by
:class:`~sample_factory.algo.runners.runner_component.RunnerComponent`, the runner's part on the main event loop,
reachable as ``runner.component`` once ``init()`` has built it; this object owns the user's hooks
(:class:`~sample_factory.algo.runners.hooks.UserHooks`) and offers read-only views of the run to them.

Both runners build the other components with the same code in
:mod:`sample_factory.algo.runners.components` and wire them by name (:mod:`sample_factory.algo.utils.wiring`).
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from sample_factory.algo.runners.components import LoopSpec, LoopSpecs
from sample_factory.algo.runners.hooks import EpisodicStatsHandler, UserHooks
from sample_factory.algo.runners.startup import RunTimeline
from sample_factory.cfg.experiment_files import already_finished, save_config
from sample_factory.envs.env_info import EnvInfo
from sample_factory.messaging.event_loop import Router
from sample_factory.utils.distributed import log_file_name
from sample_factory.utils.logging_setup import init_file_logger, log
from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, PolicyID, StatusCode
from sample_factory.utils.utils import experiment_dir

if TYPE_CHECKING:
    from sample_factory.algo.runners.rank_setup import RankContext
    from sample_factory.algo.runners.runner_component import RunnerComponent


class AlgoObserver:
    """Hooks into a training run; subclass it and override the moments you need (each is a no-op here).

    Every hook runs in the main process, on the runner's event loop, and receives the :class:`Runner` the
    observer was registered on. A hook that raises stops the run with FAILURE (its traceback is logged).
    """

    def on_init(self, runner: Runner) -> None:
        """Start of ``runner.init()``: the config is final, no component or process exists yet."""

    def on_connect_components(self, runner: Runner) -> None:
        """Every component is built and wired (``runner.env_info`` is known), no process has started yet."""

    def on_start(self, runner: Runner) -> None:
        """Start of ``runner.run()``: worker processes are up (parallel mode), sampling is about to begin."""

    def on_training_step(self, runner: Runner, training_iteration_since_resume: int) -> None:
        """After each training step of any policy; the count starts at 1 in every (resumed) run."""

    def extra_summaries(self, runner: Runner, policy_id: PolicyID, writer, env_steps: int) -> None:
        """When the runner writes a policy's summaries: add scalars with ``writer.add_scalar(tag, value, env_steps)``.

        ``writer`` is that policy's tensorboardX ``SummaryWriter`` (``.summary/{policy_id}``), ``env_steps`` the
        step of its summaries. The runner passes them positionally in this order, as Sample Factory 2's does; an
        override that names them the other way round (a step count such as ``env_steps`` third, a ``writer``
        fourth) gets the values its names ask for.
        """

    def on_evaluation(self, runner: Runner, policy_id: PolicyID, env_steps: int, results: dict[str, float]) -> None:
        """An evaluation of ``policy_id`` ended (``--eval_every_env_steps``): ``results`` are its ``eval/*`` scalars
        (``eval/avg_reward``, ``eval/avg_episode_len``, ...) for the weights of ``env_steps``."""

    def on_stop(self, runner: Runner) -> None:
        """The run is ending (target reached, interrupt or failure), before the summary writers are closed."""


class Runner:
    """A training run: ``init()`` starts it, ``run()`` trains until a stop condition and returns the status.

    Built by :func:`sample_factory.train.make_runner`; register observers and handlers between the two calls
    or before ``init()``.
    """

    def __init__(
        self,
        cfg: Config,
        unique_name: str = "runner",
        *,
        loop_specs: LoopSpecs | None = None,
        env_info: EnvInfo | None = None,
        policy_weights: list | None = None,
        restarts: bool = True,
    ) -> None:
        """``loop_specs(cfg)`` lists every loop of the run besides the runner's (``make_runner`` passes the training
        loops, the sampler modes their consumers and the sampling loops); ``env_info`` and ``policy_weights`` skip
        making them in ``init()``; ``restarts=False`` turns worker restarts off whatever ``--max_restarts`` says
        (the sampler modes' consumers take no part in the restart protocol)."""
        self.cfg = cfg
        self.unique_name = unique_name
        self._loop_specs = loop_specs
        self.given_env_info = env_info
        self.policy_weights = policy_weights
        self.restarts = restarts
        self.hooks = UserHooks(self)
        self.timeline = RunTimeline()  # start-up and shut-down milestones, logged by the runner's component
        self.component: RunnerComponent | None = None  # exists from init() on
        self.nothing_to_do = False
        self.ranks: RankContext | None = None  # a distributed run: this rank and the store (set by make_runner)

    def register_observer(self, observer: AlgoObserver) -> None:
        """Call ``observer``'s hooks at the moments :class:`AlgoObserver` describes."""
        self.hooks.add_observer(observer)

    def register_episodic_stats_handler(self, handler: EpisodicStatsHandler) -> None:
        """Call ``handler(runner, msg, policy_id)`` for every finished episode (the main process)."""
        self.hooks.add_stats_handler(handler)

    @property
    def observers(self) -> list[AlgoObserver]:
        return self.hooks.observers

    def init(self) -> StatusCode:
        """Build and start every component (in parallel mode, the worker processes)."""
        raise NotImplementedError

    def run(self) -> StatusCode:
        """Train until a stop condition; returns the ExperimentStatus code."""
        raise NotImplementedError

    def loop_specs(self) -> list[LoopSpec]:
        """Every loop of the run besides the runner's."""
        if self._loop_specs is None:
            raise TypeError(
                f"{type(self).__name__} was built without loop_specs: build runners with "
                "sample_factory.train.make_runner(cfg), which gives them the training loops"
            )
        return self._loop_specs(self.cfg)

    def prepare_run(self) -> bool:
        """The start of every ``init()``: log file, config.json, ``on_init``. False when there is nothing to do
        (the experiment already reached ``--train_for_env_steps``); ``run()`` then returns SUCCESS at once."""
        cfg, ranks = self.cfg, self.ranks
        self.timeline.mark("imports")
        if cfg.log_to_file:
            init_file_logger(experiment_dir(cfg), log_file_name(None if ranks is None else ranks.info))
        if already_finished(cfg) if ranks is None else ranks.finished:  # rank 0 decided for every rank
            self.nothing_to_do = True
            return False
        if ranks is None or ranks.info.is_main:
            save_config(cfg)
        log.info("Experiment folder: %s", experiment_dir(cfg))
        self.hooks.notify("on_init")
        return True

    def make_component(self, env_info: EnvInfo, router: Router) -> RunnerComponent:
        """The runner's component on the main loop; a distributed run's also talks to the other ranks."""
        from sample_factory.algo.runners.runner_component import RunnerComponent

        if self.ranks is None:
            return RunnerComponent(self.cfg, env_info, router, self.hooks, self.timeline)
        from sample_factory.algo.runners.rank_runner_component import RankRunnerComponent

        return RankRunnerComponent(self.cfg, env_info, router, self.hooks, self.ranks, self.timeline)

    # ---------------------------------------------------------------- state observers may read
    @property
    def env_info(self) -> EnvInfo | None:
        return self.component.env_info if self.component is not None else None

    @property
    def env_steps(self) -> dict[PolicyID, int]:
        """Env steps (frames) collected so far per policy, resumed runs included."""
        return dict(self.component.stats.env_steps) if self.component is not None else {}

    @property
    def training_iteration_since_resume(self) -> int:
        """Training steps of all policies since this run (re)started."""
        return self.component.training_iteration_since_resume if self.component is not None else 0

    @property
    def policy_avg_stats(self) -> dict[str, list[deque]]:
        """Recent episode values, as Sample Factory 2's runner keeps them: ``policy_avg_stats[stat][policy_id]`` is a
        deque of the last ``--stats_avg`` values. Stats are ``reward``, ``len``, ``true_objective`` and every key of
        ``info["episode_extra_stats"]``; the dict is empty until the first episode finishes, and a stat appears with
        the first episode that reports it (with a deque for every policy, empty for those without values yet)."""
        return self.component.stats.avg_stats if self.component is not None else {}

    @property
    def status(self) -> StatusCode:
        return self.component.status if self.component is not None else ExperimentStatus.SUCCESS
