"""Train on the VizDoom family.

    python -m sf_examples.vizdoom.train_vizdoom --env=doom_basic --experiment=doom_basic
    python -m sf_examples.vizdoom.train_vizdoom --env=doom_duel --num_agents=2 --experiment=duel

Envs: ``doom_basic``, ``doom_my_way_home``, ``doom_deadly_corridor``, ``doom_defend_the_center``,
``doom_defend_the_line``, ``doom_health_gathering``, ``doom_health_gathering_supreme``, ``doom_take_cover``,
``doom_predict_position``, ``doom_deathmatch_bots``, ``doom_duel_bots``, ``doom_duel``, ``doom_deathmatch_full``,
``doom_benchmark``. See ``docs/vizdoom.md``.
"""

from __future__ import annotations

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.utils.processes import exit_process
from sample_factory.utils.typing import Config, StatusCode
from sf_examples.entry_points import FamilyFlags, register_family_envs, train_family
from sf_examples.families import VIZDOOM
from sf_examples.vizdoom.doom.doom_model import make_vizdoom_encoder
from sf_examples.vizdoom.doom.doom_utils import make_doom_env
from sf_examples.vizdoom.doom.lifecycle import draw_base_port
from sf_examples.vizdoom.doom.scenarios import DOOM_SPECS

VIZDOOM_FLAGS = FamilyFlags.of(VIZDOOM, enjoy_script="sf_examples.vizdoom.enjoy_vizdoom")


def register_vizdoom_envs() -> None:
    """Every ``doom_*`` name creates its env through the same module-level factory."""
    register_family_envs(DOOM_SPECS, make_doom_env)


def register_vizdoom_models() -> None:
    """Screen conv net + measurements MLP (a plain conv net for envs without measurements)."""
    global_model_factory().register_encoder_factory(make_vizdoom_encoder)


def register_vizdoom_components() -> None:
    """Envs and encoder; generic tools (eval, the throughput tool) call it through ``sf_examples.families``."""
    register_vizdoom_envs()
    register_vizdoom_models()


def parse_vizdoom_cfg(argv: list[str] | None = None, evaluation: bool = False) -> Config:
    """Standard flags, the VizDoom flags and defaults, then the strict final parse."""
    return VIZDOOM_FLAGS.parse(argv, evaluation)


def choose_base_port(cfg: Config) -> Config:
    """One random base port per run, so concurrent runs on one machine rarely probe the same ports."""
    if not cfg.doom_base_port:
        cfg.doom_base_port = draw_base_port()
    return cfg


def parse_vizdoom_train_cfg() -> Config:
    """The command line of a training run, with its base port chosen."""
    return choose_base_port(parse_vizdoom_cfg())


def main() -> StatusCode:
    return train_family(register_vizdoom_components, parse_vizdoom_train_cfg, DOOM_SPECS)


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
