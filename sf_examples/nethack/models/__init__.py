"""The NetHack family's encoders, by their ``--model`` name."""

from __future__ import annotations

from sf_examples.nethack.models.chaotic_dwarf import ChaoticDwarvenGPT5
from sf_examples.nethack.models.scaled import ScaledNet

MODELS = {
    "ChaoticDwarvenGPT5": ChaoticDwarvenGPT5,
    "ScaledNet": ScaledNet,
}
