"""The conformance cases: each is a small user script (register envs and model parts, parse with extra params, train)
in the styles Sample Factory 2's documentation shows. ``user_script.py`` runs a case; ``test_user_code.py`` checks
what it did.

Nothing is registered at import: ``Case.register`` does it in the user script's process, and parallel-mode workers
unpickle the registered factories from this importable module, as they would from a user's own.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import gymnasium as gym
from torch import nn
from user_envs import DictPoleEnv, ImagePoleEnv, TwoPolesEnv
from user_models import (
    DictCallEncoder,
    GruCore,
    HookedDecoder,
    InplaceConvEncoder,
    MarkedCategorical,
    NormedDecoder,
    PerKeyEncoder,
    ViewConvEncoder,
    WholeActorCritic,
    make_temperature_actor_critic,
    marked_categorical_parameters,
)

from sample_factory.algo.runners.runner import AlgoObserver
from sample_factory.algo.utils.context import global_model_factory
from sample_factory.cfg.arguments import parse_full_cfg, parse_sf_args
from sample_factory.envs.env_utils import register_env
from sample_factory.model.encoder import Encoder
from sample_factory.train import make_runner, run_rl
from sample_factory.utils.utils import experiment_dir

# Tiny budgets: a case must train, save and be enjoyed in seconds on a shared 2-core machine.
COMMON_DEFAULTS = dict(
    train_for_env_steps=2048, device="cpu", num_workers=1, num_envs_per_worker=2, rollout=32, batch_size=128,
    num_batches_per_epoch=1, num_epochs=1, decorrelate_experience_max_seconds=0, seed=1, use_rnn=False,
    encoder_mlp_layers=[64], normalize_input=False, experiment_summaries_interval=1,
)  # fmt: skip


# ---- env factories, in both of Sample Factory 2's signatures ------------------------------------------------------


def make_image_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return ImagePoleEnv(render_mode=render_mode)


def make_dict_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return DictPoleEnv(render_mode=render_mode)


def make_two_poles(full_env_name, cfg=None, env_config=None, render_mode=None):
    return TwoPolesEnv(render_mode=render_mode)


def make_vector_pole(full_env_name, cfg=None, env_config=None, render_mode=None):
    return gym.make("CartPole-v1", render_mode=render_mode)


def make_pole_positionally(_env_name, _cfg, _env_config, render_mode):
    """The other documented signature: four positional parameters with names of one's own, no defaults."""
    if _env_name != "user_pole_positional" or getattr(_cfg, "env", None) != _env_name:
        raise ValueError(f"unexpected arguments: {_env_name!r}, cfg.env={getattr(_cfg, 'env', None)!r}")
    return gym.make("CartPole-v1", render_mode=render_mode)


ENV_FACTORIES = {
    "user_image_pole": make_image_pole,
    "user_dict_pole": make_dict_pole,
    "user_two_poles": make_two_poles,
    "user_vector_pole": make_vector_pole,
    "user_pole_positional": make_pole_positionally,
}


# ---- extra params the Sample Factory 2 way -------------------------------------------------------------------------


def add_extra_params(parser) -> None:
    group = parser.add_argument_group("user params")
    group.add_argument("--user_hidden_size", type=int, default=16, help="Width of the user's MLP encoder.")


class SizedMlpEncoder(Encoder):
    """An MLP encoder whose width comes from the user's own flag."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.size = cfg.user_hidden_size
        self.net = nn.Sequential(nn.Linear(obs_space["obs"].shape[0], self.size), nn.ReLU())
        print(f"SizedMlpEncoder built with user_hidden_size={self.size}", flush=True)

    def forward(self, obs_dict):
        return self.net(obs_dict["obs"])

    def get_out_size(self) -> int:
        return self.size


# ---- observers and custom summaries --------------------------------------------------------------------------------


class CountingObserver(AlgoObserver):
    """Counts training steps and episodes, writes a summary of its own, and leaves its counts in the experiment."""

    def __init__(self) -> None:
        self.training_steps = 0
        self.episodes = 0
        self.extra_stats_seen = 0
        self.summaries = 0

    def on_training_step(self, runner, training_iteration_since_resume: int) -> None:
        self.training_steps += 1

    def extra_summaries(self, runner, policy_id, env_steps, summary_writer) -> None:
        summary_writer.add_scalar("user/episodes_seen", self.episodes, env_steps)
        self.summaries += 1
        self._save(runner)  # the run's last summaries come after on_stop: a run shorter than one interval has no other

    def on_episode(self, runner, msg, policy_id) -> None:
        self.episodes += 1
        self.extra_stats_seen += int("pole_length" in msg["episodic"]["episode_extra_stats"])

    def on_stop(self, runner) -> None:
        self._save(runner)

    def _save(self, runner) -> None:
        with open(os.path.join(experiment_dir(runner.cfg), "user_observer.json"), "w") as f:
            json.dump(vars(self), f)


def train_with_observer(cfg) -> int:
    cfg, runner = make_runner(cfg)
    observer = CountingObserver()
    runner.register_observer(observer)
    runner.register_episodic_stats_handler(observer.on_episode)
    status = runner.init()
    return runner.run() if status == 0 else status


# ---- the cases ------------------------------------------------------------------------------------------------------


@dataclass
class Case:
    """One user script: its env, the model parts it registers, its defaults, extra params and training call."""

    env: str
    encoder: Callable | None = None
    core: Callable | None = None
    decoder: Callable | None = None
    actor_critic: Callable | None = None
    defaults: dict = field(default_factory=dict)
    extra_params: Callable | None = None
    train: Callable = run_rl
    # key (name or space type) -> (make_distribution, num_parameters) for register_action_distribution
    distributions: dict = field(default_factory=dict)

    def register(self) -> None:
        register_env(self.env, ENV_FACTORIES[self.env])
        factory = global_model_factory()
        for part, register in (
            (self.encoder, factory.register_encoder_factory),
            (self.core, factory.register_model_core_factory),
            (self.decoder, factory.register_decoder_factory),
            (self.actor_critic, factory.register_actor_critic_factory),
        ):
            if part is not None:
                register(part)
        for key, (make, num_parameters) in self.distributions.items():
            factory.register_action_distribution(key, make, num_parameters)

    def parse(self, argv: list[str], evaluation: bool = False):
        parser, _ = parse_sf_args(argv=argv, evaluation=evaluation)
        if self.extra_params is not None:
            self.extra_params(parser)
        parser.set_defaults(env=self.env, **{**COMMON_DEFAULTS, **self.defaults})
        return parse_full_cfg(parser, argv)


CASES = {
    "view_conv_encoder": Case("user_image_pole", encoder=ViewConvEncoder),
    "inplace_activations": Case("user_image_pole", encoder=InplaceConvEncoder),
    "dict_obs_per_key_encoders": Case("user_dict_pole", encoder=PerKeyEncoder),
    "custom_core_extra_params": Case(
        "user_vector_pole",
        encoder=SizedMlpEncoder,
        core=GruCore,
        extra_params=add_extra_params,
        defaults=dict(use_rnn=True, rnn_size=32, recurrence=8),
    ),
    "custom_decoder_positional_env": Case(
        "user_pole_positional", decoder=NormedDecoder, defaults=dict(actor_critic_share_weights=False)
    ),
    "whole_actor_critic": Case("user_vector_pole", actor_critic=WholeActorCritic),
    "custom_action_parameterization": Case("user_vector_pole", actor_critic=make_temperature_actor_critic),
    "multi_agent_view_conv": Case("user_two_poles", encoder=ViewConvEncoder),
    # the library's own conv net: it must keep every fast path without a check
    "observers_and_summaries": Case("user_two_poles", train=train_with_observer),
    "call_override_and_hook": Case("user_vector_pole", encoder=DictCallEncoder, decoder=HookedDecoder),
    # a distribution registered by name, used by the learner, the inference worker, the evaluator and enjoy
    "registered_action_distribution": Case(
        "user_vector_pole",
        distributions={"user_marked_categorical": (MarkedCategorical, marked_categorical_parameters)},
        defaults=dict(
            action_distribution="user_marked_categorical",
            eval_every_env_steps=512,
            eval_episodes=2,
            eval_deterministic=True,
        ),  # fmt: skip
    ),
}
