"""Shared config helpers for the model tests; every test starts and ends with an empty model factory."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from sample_factory.algo.utils.context import reset_global_context
from sample_factory.utils.attr_dict import AttrDict

# the model flags of cli_params.tsv with their defaults
MODEL_DEFAULTS: dict[str, Any] = dict(
    normalize_returns=True,
    obs_subtract_mean=0.0,
    obs_scale=1.0,
    normalize_input=True,
    normalize_input_keys=None,
    encoder_mlp_layers=[512, 512],
    encoder_conv_architecture="convnet_simple",
    encoder_conv_mlp_layers=[512],
    use_rnn=True,
    rnn_size=512,
    rnn_type="gru",
    rnn_num_layers=1,
    decoder_mlp_layers=[],
    nonlinearity="elu",
    policy_initialization="orthogonal",
    policy_init_gain=1.0,
    actor_critic_share_weights=True,
    adaptive_stddev=True,
    continuous_tanh_scale=0.0,
    initial_stddev=1.0,
    action_head="factorized",
    action_distribution="default",
)

# layer widths small enough that a forward+backward takes milliseconds
SMALL_SIZES: dict[str, Any] = dict(encoder_mlp_layers=[16, 16], encoder_conv_mlp_layers=[16], rnn_size=8)


def make_test_cfg(**overrides: Any) -> AttrDict:
    """The default model config of the command line, with ``overrides`` applied."""
    unknown = set(overrides) - set(MODEL_DEFAULTS)
    if unknown:
        raise KeyError(f"not model flags: {sorted(unknown)}")
    return AttrDict({**MODEL_DEFAULTS, **overrides})


def make_small_cfg(**overrides: Any) -> AttrDict:
    """``make_test_cfg`` with small layer widths, for fast tests."""
    return make_test_cfg(**{**SMALL_SIZES, **overrides})


@pytest.fixture
def make_cfg() -> Callable[..., AttrDict]:
    return make_small_cfg


@pytest.fixture(autouse=True)
def fresh_model_factory() -> Iterator[None]:
    """Registrations made by one test must not reach the next; seeded so sampling tests are reproducible."""
    reset_global_context()
    torch.manual_seed(0)
    yield
    reset_global_context()
