"""The example env families in one table, announced to the library's env-family registry.

A family's train script (``sf_examples.vizdoom.train_vizdoom``, ``sf_examples.train_gym_env``, ...) registers its
envs and adds its flags and defaults itself. Generic tools (``python -m sample_factory.eval``, the random-policy
throughput tool) get only an ``--env`` name and ask :mod:`sample_factory.envs.env_families`, which this module
fills: :func:`register_example_families` is this package's ``sample_factory.env_families`` entry point.

Family modules are named as ``"module:function"`` strings and imported only when used, so importing this table
is cheap and VizDoom (MuJoCo, ale-py) is imported only for ``doom_*`` (``mujoco_*``, ``atari_*``) envs.
"""

from __future__ import annotations

from sample_factory.envs.env_families import (
    EnvFamily,
    add_family_args,
    family_of,
    register_env_family,
    register_family_env,
)

_DOOM_PARAMS = "sf_examples.vizdoom.doom.doom_params"
_CUSTOM_ENV = "sf_examples.train_custom_env_custom_model"
_CUSTOM_MULTI_ENV = "sf_examples.train_custom_multi_env"
_GYM_UTILS = "sf_examples.gym.gym_utils"
_MUJOCO_PARAMS = "sf_examples.mujoco.mujoco_params"
_ATARI_PARAMS = "sf_examples.atari.atari_params"

VIZDOOM = EnvFamily(
    name="vizdoom",
    train_script="sf_examples.vizdoom.train_vizdoom",
    register="sf_examples.vizdoom.train_vizdoom:register_vizdoom_components",
    add_args=f"{_DOOM_PARAMS}:add_doom_env_args",
    override_defaults=f"{_DOOM_PARAMS}:doom_override_defaults",
    env_prefix="doom_",  # every name of DOOM_SPECS; a misspelt doom_* name fails in register_family_env
    defaults_take_evaluation=True,
)
MUJOCO = EnvFamily(
    name="mujoco",
    train_script="sf_examples.mujoco.train_mujoco",
    register="sf_examples.mujoco.train_mujoco:register_mujoco_components",
    add_args=f"{_MUJOCO_PARAMS}:add_mujoco_flags",
    override_defaults=f"{_MUJOCO_PARAMS}:set_mujoco_defaults",
    env_prefix="mujoco_",  # every name of MUJOCO_ENVS; a misspelt mujoco_* name fails in register_family_env
    defaults_take_evaluation=True,
)
ATARI = EnvFamily(
    name="atari",
    train_script="sf_examples.atari.train_atari",
    register="sf_examples.atari.train_atari:register_atari_components",
    add_args=f"{_ATARI_PARAMS}:add_atari_env_args",
    override_defaults=f"{_ATARI_PARAMS}:set_atari_defaults",
    env_prefix="atari_",
    defaults_take_evaluation=True,
)
CUSTOM_ENV = EnvFamily(
    name="custom_env",
    train_script=_CUSTOM_ENV,
    register=f"{_CUSTOM_ENV}:register_custom_components",
    add_args=f"{_CUSTOM_ENV}:add_custom_env_args",
    override_defaults=f"{_CUSTOM_ENV}:custom_env_override_defaults",
    env_names=frozenset({"my_custom_env_v1"}),
)
CUSTOM_MULTI_ENV = EnvFamily(
    name="custom_multi_env",
    train_script=_CUSTOM_MULTI_ENV,
    register=f"{_CUSTOM_MULTI_ENV}:register_multi_env_components",
    add_args=f"{_CUSTOM_MULTI_ENV}:add_multi_env_args",
    override_defaults=f"{_CUSTOM_MULTI_ENV}:multi_env_override_defaults",
    env_names=frozenset({"my_custom_multi_env_v1"}),
)
BATCHED_CARTPOLE = EnvFamily(
    name="batched_cartpole",
    train_script="sf_examples.train_batched_cartpole",
    register="sf_examples.batched_cartpole:register_batched_cartpole",
    add_args="sf_examples.batched_cartpole:add_batched_cartpole_args",
    override_defaults="sf_examples.train_batched_cartpole:batched_cartpole_override_defaults",
    env_names=frozenset({"batched_cartpole"}),
)
PETTINGZOO = EnvFamily(
    name="pettingzoo",
    train_script="sf_examples.train_pettingzoo_env",
    register="sf_examples.train_pettingzoo_env:register_pettingzoo_envs",
    add_args="sf_examples.train_pettingzoo_env:add_pettingzoo_env_args",
    override_defaults="sf_examples.train_pettingzoo_env:pettingzoo_override_defaults",
    env_names=frozenset({"knights_archers_zombies_v11", "pistonball_v6", "cooperative_pong_v6", "predator_prey_v0"}),
    env_name_first=True,
)
ENVPOOL_ATARI = EnvFamily(
    name="envpool_atari",
    train_script="sf_examples.envpool.atari.train_envpool_atari",
    register="sf_examples.envpool.atari.train_envpool_atari:register_envpool_atari_family",
    add_args="sf_examples.envpool.envpool_utils:add_envpool_args",
    override_defaults="sf_examples.envpool.atari.envpool_atari_params:envpool_atari_override_defaults",
    env_prefix="envpool_atari_",
    env_name_first=True,
)
ENVPOOL_MUJOCO = EnvFamily(
    name="envpool_mujoco",
    train_script="sf_examples.envpool.mujoco.train_envpool_mujoco",
    register="sf_examples.envpool.mujoco.train_envpool_mujoco:register_envpool_mujoco_family",
    add_args="sf_examples.envpool.envpool_utils:add_envpool_args",
    override_defaults="sf_examples.envpool.mujoco.envpool_mujoco_params:envpool_mujoco_override_defaults",
    env_prefix="envpool_mujoco_",
    env_name_first=True,
)
DMLAB = EnvFamily(
    name="dmlab",
    train_script="sf_examples.dmlab.train_dmlab",
    register="sf_examples.dmlab.train_dmlab:register_dmlab_family",
    add_args="sf_examples.dmlab.dmlab_params:add_dmlab_env_args",
    override_defaults="sf_examples.dmlab.dmlab_params:dmlab_override_defaults",
    env_prefix="dmlab_",  # a misspelt dmlab_* name fails in register_family_env
)
NETHACK = EnvFamily(
    name="nethack",
    train_script="sf_examples.nethack.train_nethack",
    register="sf_examples.nethack.train_nethack:register_nethack_family",
    add_args="sf_examples.nethack.nethack_params:add_nethack_env_args",
    override_defaults="sf_examples.nethack.nethack_params:nethack_override_defaults",
    env_prefix="nethack_",
    env_name_first=True,
)
BRAX = EnvFamily(
    name="brax",
    train_script="sf_examples.brax.train_brax",
    register="sf_examples.brax.train_brax:register_brax_family",
    add_args="sf_examples.brax.brax_params:add_brax_env_args",
    override_defaults="sf_examples.brax.brax_params:brax_override_defaults",
    env_names=frozenset(
        {
            "ant",
            "halfcheetah",
            "hopper",
            "humanoid",
            "humanoidstandup",
            "inverted_double_pendulum",
            "inverted_pendulum",
            "pusher",
            "reacher",
            "swimmer",
            "walker2d",
        }
    ),
    env_name_first=True,
)
# everything no other family owns: a Gymnasium id, or "module:EnvId" for ids registered when module is imported
GYM = EnvFamily(
    name="gym",
    train_script="sf_examples.train_gym_env",
    register=f"{_GYM_UTILS}:register_gym_env",
    add_args=f"{_GYM_UTILS}:add_gym_env_args",
    override_defaults=f"{_GYM_UTILS}:gym_override_defaults",
    env_name_first=True,
    fallback=True,
)
EXAMPLE_FAMILIES: tuple[EnvFamily, ...] = (
    VIZDOOM,
    MUJOCO,
    ATARI,
    CUSTOM_ENV,
    CUSTOM_MULTI_ENV,
    BATCHED_CARTPOLE,
    PETTINGZOO,
    ENVPOOL_ATARI,
    ENVPOOL_MUJOCO,
    DMLAB,
    NETHACK,
    BRAX,
)


def register_example_families() -> None:
    """Announce every example family to the library (the ``sample_factory.env_families`` entry point, setup.py)."""
    for family in (*EXAMPLE_FAMILIES, GYM):
        register_env_family(family)


# importing this table is announcing it, for scripts run from a checkout where the package is not installed
register_example_families()

__all__ = [
    "ATARI",
    "BATCHED_CARTPOLE",
    "BRAX",
    "CUSTOM_ENV",
    "CUSTOM_MULTI_ENV",
    "DMLAB",
    "ENVPOOL_ATARI",
    "ENVPOOL_MUJOCO",
    "EXAMPLE_FAMILIES",
    "GYM",
    "MUJOCO",
    "NETHACK",
    "PETTINGZOO",
    "VIZDOOM",
    "EnvFamily",
    "add_family_args",
    "family_of",
    "register_example_families",
    "register_family_env",
]
