"""Train on the Atari family.

    python -m sf_examples.atari.train_atari --env=atari_breakout --experiment=breakout
    python -m sf_examples.atari.train_atari --env=atari_pong --train_for_env_steps=10000000

Envs: ``atari_<game>`` for the 57 games of the Atari-57 benchmark (``atari_breakout``, ``atari_pong``,
``atari_beamrider``, ``atari_qbert``, ``atari_spaceinvaders``, ``atari_seaquest``, ``atari_montezuma``, ...;
the full table is in ``docs/atari.md``).
"""

from __future__ import annotations

from sample_factory.utils.processes import exit_process
from sample_factory.utils.typing import StatusCode
from sf_examples.atari.atari_games import ATARI_ENVS
from sf_examples.atari.atari_utils import make_atari_env
from sf_examples.entry_points import FamilyFlags, register_family_envs, train_family
from sf_examples.families import ATARI

ATARI_FLAGS = FamilyFlags.of(ATARI, enjoy_script="sf_examples.atari.enjoy_atari")


def register_atari_envs() -> None:
    """Every ``atari_*`` name creates its env through the same module-level factory."""
    register_family_envs(ATARI_ENVS, make_atari_env)


def register_atari_components() -> None:
    """The family's envs; the model is the library's conv net, chosen by flags, so nothing else is registered."""
    register_atari_envs()


# parse_atari_cfg(argv=None, evaluation=False) -> cfg: standard flags, the Atari flags and defaults, then the strict
# final parse; parse_atari_args is Sample Factory 2's name for it
parse_atari_cfg = parse_atari_args = ATARI_FLAGS.parse


def main() -> StatusCode:
    return train_family(register_atari_components, parse_atari_cfg, ATARI_ENVS)


if __name__ == "__main__":
    exit_process(main())  # sys.exit without the interpreter's module teardown (see exit_process)
