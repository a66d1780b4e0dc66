"""Type aliases shared across the package (names follow Sample Factory 2's public API)."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Callable
from typing import Any

import gymnasium as gym

from sample_factory.utils.attr_dict import AttrDict

Config = Namespace | AttrDict
StatusCode = int
PolicyID = int
MpQueue = Any
ObsSpace = gym.Space
ActionSpace = gym.Space
Device = str
InitModelData = tuple[PolicyID, dict, Any, int]
CreateEnvFunc = Callable[..., Any]

# The base class of user envs: Gymnasium's own, so envs written against Sample Factory 2 (``class MyEnv(Env)``) are
# ordinary Gymnasium envs that every Gymnasium wrapper and our isinstance checks accept.
Env = gym.Env
