"""Per-layer weight statistics of checkpoints, to compare how two trainings' models were initialised.

    python bench/layer_statistics.py train_dir/EXP/checkpoint_p0/checkpoint_000000002_4096.pth [more.pth ...]

Reads each file with ``torch.load`` (this repository's checkpoints and Sample Factory 2's both keep the model's
``state_dict`` under ``"model"``; a bare state dict works too) and prints, per floating-point tensor: its shape,
standard deviation, largest absolute value, kurtosis and, for matrices, the mean norm of the rows. Those tell the
usual initialisations apart without knowing the code that made them: torch's default uniform weights have kurtosis
1.8 and no value beyond 1/sqrt(fan-in); orthogonal rows have norm ``gain`` and a near-Gaussian kurtosis of 3; zeroed
biases stay within a few learning rates of zero for the first training steps. So a checkpoint written after a
handful of steps (``--train_for_env_steps`` of one or two batches) shows the initialisation. Observation and
returns normaliser statistics are skipped.
"""

from __future__ import annotations

import argparse
import math

import torch
from torch import Tensor


def tensor_statistics(t: Tensor) -> dict[str, float]:
    """std, max_abs, kurtosis and (for 2-D tensors) row_norm of ``t``; kurtosis is nan for a constant tensor."""
    x = t.detach().double().flatten()
    var = x.var() if x.numel() > 1 else torch.tensor(0.0, dtype=torch.float64)
    centred = x - x.mean()
    kurtosis = float((centred**4).mean() / var**2) if var > 0 else math.nan
    stats = {"std": float(var.sqrt()), "max_abs": float(x.abs().max()), "kurtosis": kurtosis}
    if t.dim() == 2:
        stats["row_norm"] = float(t.detach().double().norm(dim=1).mean())
    return stats


def model_state(path: str) -> dict[str, Tensor]:
    """The model's state dict in a checkpoint file (the ``"model"`` entry, or the file itself)."""
    checkpoint = torch.load(path, map_location="cpu", weights_only=False)
    state = checkpoint.get("model", checkpoint) if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise SystemExit(f"{path}: neither a checkpoint with a 'model' entry nor a state dict")
    return state


def statistics_table(state: dict[str, Tensor]) -> list[str]:
    """One line per floating-point tensor of more than one value, normaliser statistics left out."""
    lines = []
    for name, t in state.items():
        if "normalizer" in name or not torch.is_tensor(t) or not t.is_floating_point() or t.numel() < 2:
            continue
        s = tensor_statistics(t)
        row = f" row-norm {s['row_norm']:.3f}" if "row_norm" in s else ""
        shape = str(tuple(t.shape))
        lines.append(
            f"{name:60s} {shape:16s} std {s['std']:.4f} max|w| {s['max_abs']:.4f} kurt {s['kurtosis']:.2f}{row}"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoints", nargs="+", help="checkpoint files (.pth)")
    args = parser.parse_args(argv)
    for path in args.checkpoints:
        print(f"== {path}")
        print("\n".join(statistics_table(model_state(path))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
