"""Train one shared policy for every agent of a PettingZoo parallel env.

    python -m sf_examples.train_pettingzoo_env --experiment=kaz                  # knights_archers_zombies_v11
    python -m sf_examples.train_pettingzoo_env --env=pistonball_v6 --experiment=pistonball

Install with ``pip install "sample-factory[pettingzoo]"`` (PettingZoo's butterfly envs: pygame and pymunk, plain
PyPI wheels). The default env, ``knights_archers_zombies_v11``, has four agents (two archers, two knights) with
vector observations; a knight or archer that a zombie reaches is out for the rest of the episode, which
:class:`~sample_factory.envs.pettingzoo_envs.PettingZooParallelEnv` reports as ``is_active=False`` so its idle
steps are not trained on. Image envs are resized to ``--pettingzoo_img_size`` square CHW frames. See
``docs/pettingzoo.md``.

Scripts written for Sample Factory 2 use ``parse_custom_args`` and ``register_custom_components`` from here; the
latter also registers ``make_custom_encoder``, which gives board observations (channels last, as PettingZoo's
board games have them) a small conv net, :class:`CustomConvEncoder`, and every other observation the default
encoder.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
from torch import Tensor

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.envs.env_utils import require_optional_module
from sample_factory.envs.pettingzoo_envs import ObsTransform, PettingZooParallelEnv
from sample_factory.model.encoder import ConvEncoderImpl, Encoder, default_make_encoder_func
from sample_factory.model.model_utils import nonlinearity
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.typing import Config, ObsSpace, StatusCode
from sf_examples.entry_points import FamilyFlags, register_family_envs, train_family

DEFAULT_ENV = "knights_archers_zombies_v11"


@dataclass(frozen=True)
class PettingZooSpec:
    """Where a PettingZoo env lives, the arguments it gets and whether its observations are images."""

    module: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    image: bool = False
    defaults: dict[str, Any] = field(default_factory=dict)  # of this env only, over the family's


PETTINGZOO_SPECS: dict[str, PettingZooSpec] = {
    # 4 agents, (27, 5) vector observations (positions and headings of agents, zombies, arrows), Discrete(6)
    "knights_archers_zombies_v11": PettingZooSpec("pettingzoo.butterfly.knights_archers_zombies_v11"),
    # 20 pistons, each sees a 457x120 RGB slice around itself; Discrete(3) down/stay/up
    "pistonball_v6": PettingZooSpec("pettingzoo.butterfly.pistonball_v6", {"continuous": False}, image=True),
    # 2 paddles keep one ball in play together, each sees the whole 280x480 RGB screen; Discrete(3)
    "cooperative_pong_v6": PettingZooSpec("pettingzoo.butterfly.cooperative_pong_v6", image=True),
    # a predator (Box(2) velocity, 4 observations) and a prey (Discrete(5), 6 observations): agents of different
    # spaces, one policy each (an env of this repository, sf_examples/pettingzoo_predator_prey.py)
    "predator_prey_v0": PettingZooSpec("sf_examples.pettingzoo_predator_prey", defaults={"num_policies": 2}),
}

# Defaults for every env of the family; anything given on the command line wins.
PETTINGZOO_DEFAULTS: dict[str, Any] = {
    "env": DEFAULT_ENV,
    "num_workers": 2,
    "num_envs_per_worker": 2,
    "rollout": 32,
    "batch_size": 1024,
    "learning_rate": 3e-4,
    "gamma": 0.99,
    "exploration_loss_coeff": 0.01,
    # what an agent sees is a snapshot of the arena: a feed-forward policy reacts to it directly
    "use_rnn": False,
    "normalize_input": True,
}
VECTOR_DEFAULTS: dict[str, Any] = {"encoder_mlp_layers": [128, 128]}
IMAGE_DEFAULTS: dict[str, Any] = {"obs_scale": 255.0, "encoder_mlp_layers": [256]}


def resize_to_chw(space: gym.spaces.Box, size: int) -> ObsTransform:
    """HWC uint8 images -> ``[C, size, size]`` uint8 (area interpolation keeps thin pistons and balls visible)."""
    cv2 = require_optional_module("cv2", extra="pettingzoo", what="PettingZoo image envs")
    channels = space.shape[2] if len(space.shape) == 3 else 1
    box = gym.spaces.Box(0, 255, shape=(channels, size, size), dtype=np.uint8)

    def transform(obs: np.ndarray) -> np.ndarray:
        resized = cv2.resize(np.asarray(obs), (size, size), interpolation=cv2.INTER_AREA)
        return resized.reshape(size, size, channels).transpose(2, 0, 1)

    return ObsTransform(box, transform)


def make_pettingzoo_parallel_env(env_name: str, max_cycles: int, render_mode: str | None) -> Any:
    """The raw PettingZoo parallel env of ``env_name`` (``max_cycles`` -1: the env's own episode length)."""
    spec = PETTINGZOO_SPECS[env_name]
    require_optional_module("pettingzoo", extra="pettingzoo", what="PettingZoo envs")
    module = importlib.import_module(spec.module)
    kwargs = dict(spec.kwargs)
    if max_cycles > 0:
        kwargs["max_cycles"] = max_cycles
    return module.parallel_env(render_mode=render_mode, **kwargs)


def make_pettingzoo_env(
    full_env_name: str, cfg: Config | None = None, env_config: AttrDict | None = None, render_mode: str | None = None
) -> PettingZooParallelEnv:
    """The ``make_env_func`` of every env of the family."""
    del env_config
    max_cycles = int(getattr(cfg, "pettingzoo_max_cycles", -1)) if cfg is not None else -1
    size = int(getattr(cfg, "pettingzoo_img_size", 64)) if cfg is not None else 64
    env = make_pettingzoo_parallel_env(full_env_name, max_cycles, render_mode)
    transform = None
    if PETTINGZOO_SPECS[full_env_name].image:
        transform = resize_to_chw(env.observation_space(env.possible_agents[0]), size)
    return PettingZooParallelEnv(env, obs_transform=transform)


def add_pettingzoo_env_args(env_name: str, parser: argparse.ArgumentParser) -> None:
    """Flags of the family (the same for every env); saved in config.json, so enjoy and eval rebuild the env."""
    del env_name
    group = parser.add_argument_group("PettingZoo", "Flags of the PettingZoo envs.")
    group.add_argument(
        "--pettingzoo_max_cycles",
        type=int,
        default=-1,
        help="Steps before an episode is truncated; -1 keeps the env's own (900 for knights_archers_zombies_v11, "
        "125 for pistonball_v6). Short episodes are handy for quick tests.",
    )
    group.add_argument(
        "--pettingzoo_img_size",
        type=int,
        default=64,
        help="Image envs only: side of the square CHW frame each agent's view is resized to.",
    )


def pettingzoo_override_defaults(env_name: str, parser: argparse.ArgumentParser) -> None:
    """Family defaults, plus an MLP for vector envs or pixel scaling for image envs, then the env's own."""
    parser.set_defaults(**PETTINGZOO_DEFAULTS)
    spec = PETTINGZOO_SPECS.get(env_name)
    parser.set_defaults(**(IMAGE_DEFAULTS if spec is not None and spec.image else VECTOR_DEFAULTS))
    if spec is not None:
        parser.set_defaults(**spec.defaults)


def register_pettingzoo_envs(env_name: str | None = None) -> None:
    """Register every env of the family (``env_name``, passed by generic tools, makes no difference)."""
    del env_name
    register_family_envs(PETTINGZOO_SPECS, make_pettingzoo_env)


PETTINGZOO_FLAGS = FamilyFlags(
    add_pettingzoo_env_args,
    pettingzoo_override_defaults,
    train_script="sf_examples.train_pettingzoo_env",
    enjoy_script="sf_examples.enjoy_pettingzoo_env",
    default_env=DEFAULT_ENV,
)
# parse_pettingzoo_args(argv=None, evaluation=False) -> cfg: standard flags, the family's flags and the defaults of
# --env (DEFAULT_ENV if none), then the strict final parse
parse_pettingzoo_args = PETTINGZOO_FLAGS.parse


class CustomConvEncoder(Encoder):
    """Two 2x2 convolutions (stride 1) over a board given channels last (``obs`` ``[H, W, C]``), then
    ``--encoder_conv_mlp_layers``. Small filters keep boards as small as tic-tac-toe's 3x3 usable."""

    def __init__(self, cfg: Config, obs_space: ObsSpace) -> None:
        super().__init__(cfg)
        height, width, channels = obs_space["obs"].shape
        if min(height, width) < 3:
            raise ValueError(f"CustomConvEncoder needs a board of at least 3x3 cells, got {height}x{width}")
        filters = [[channels, 32, 2, 1], [32, 64, 2, 1]]
        self.enc = ConvEncoderImpl((channels, height, width), filters, cfg.encoder_conv_mlp_layers, nonlinearity(cfg))

    def forward(self, obs_dict: dict[str, Tensor]) -> Tensor:
        return self.enc(obs_dict["obs"].permute(0, 3, 1, 2))  # [B, H, W, C] -> [B, C, H, W] -> [B, out_size]

    def get_out_size(self) -> int:
        return self.enc.get_out_size()


def is_channels_last_board(obs_space: ObsSpace) -> bool:
    """An ``obs`` entry of shape ``[H, W, C]`` with a few channels (at most 4, fewer than rows and columns)."""
    space = obs_space["obs"] if isinstance(obs_space, gym.spaces.Dict) and "obs" in obs_space.spaces else obs_space
    shape = getattr(space, "shape", None) or ()
    return len(shape) == 3 and shape[2] <= 4 and shape[2] < min(shape[0], shape[1])


def make_custom_encoder(cfg: Config, obs_space: ObsSpace) -> Encoder:
    """:class:`CustomConvEncoder` for channels-last boards, the library's default encoder for anything else."""
    if is_channels_last_board(obs_space):
        return CustomConvEncoder(cfg, obs_space)
    return default_make_encoder_func(cfg, obs_space)


def register_custom_components() -> None:
    """Register every env of the family and :func:`make_custom_encoder` (Sample Factory 2's registration call)."""
    register_pettingzoo_envs()
    global_model_factory().register_encoder_factory(make_custom_encoder)


# Sample Factory 2's name for the family's parser: parse_custom_args(argv=None, evaluation=False) -> cfg
parse_custom_args = parse_pettingzoo_args


def main() -> StatusCode:
    return train_family(register_pettingzoo_envs, parse_pettingzoo_args, PETTINGZOO_SPECS)


if __name__ == "__main__":
    sys.exit(main())
