"""Watch a Brax agent: copy 0 of the batch in a window, or in an MP4 with ``--save_video --no_render``.

    python -m sf_examples.brax.enjoy_brax --env=ant --experiment=ant_brax --no_render --max_num_episodes=10
    python -m sf_examples.brax.enjoy_brax --env=ant --experiment=ant_brax --save_video --no_render --video_name=ant

Every copy of the batch (``--env_agents``, as trained unless given here) plays; each finished episode counts
towards ``--max_num_episodes``. Frames come from MuJoCo's renderer (EGL where there is no display).
"""

from __future__ import annotations

import sys

from sample_factory.utils.misc import ExperimentStatus
from sample_factory.utils.typing import Config, StatusCode
from sample_factory.utils.utils import log
from sf_examples.brax.brax_render import BraxRenderError
from sf_examples.brax.train_brax import run_brax
from sf_examples.entry_points import enjoy_status


def enjoy_brax(cfg: Config) -> StatusCode:
    """Watch the agent; a window or renderer that cannot start ends the run with one error line."""
    try:
        return enjoy_status(cfg)
    except BraxRenderError as exc:
        log.error("%s", exc)
        return ExperimentStatus.FAILURE


def main() -> StatusCode:
    return run_brax(True, enjoy_brax)


if __name__ == "__main__":
    sys.exit(main())
