"""A human plays instead of the policy: the game runs in spectator mode and reads the keyboard and mouse."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym


def require_display(what: str) -> None:
    """Human play needs ViZDoom's window: an error naming the fix where there is no display."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        raise RuntimeError(
            f"{what} needs a display for ViZDoom's window (DISPLAY/WAYLAND_DISPLAY is not set): run it on a desktop "
            "session, or over ssh -X; to watch a trained agent without a display use enjoy_vizdoom --save_video "
            "--no_render"
        )


class StepHumanInput(gym.Wrapper):
    """The actions passed to ``step`` are ignored: ViZDoom takes the human's input from its window (asynchronous
    spectator mode, real time) and ``info["human_action"]`` holds the buttons they pressed. Apply before the first
    reset; needs a display."""

    def __init__(self, env: gym.Env) -> None:
        require_display("Playing VizDoom by hand")
        super().__init__(env)
        core = env.unwrapped
        if core.game is not None:
            raise ValueError("StepHumanInput must be applied before the game starts (before the first reset)")
        core.options.spectator = True
        core.options.async_mode = True
        core.options.window_visible = True

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.env.step(action)  # the env in spectator mode ignores the action and reads the human's
