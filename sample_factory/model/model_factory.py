"""Registry of the functions that build each part of the actor-critic, and of the action distributions.

User code swaps in its own encoder, core, decoder or whole actor-critic by
registering a factory function on ``global_model_factory()`` before training.
It can also register action distributions: for an action space type (used
wherever a space of that type appears, also as a component of a ``Tuple``) or
under a name (selected with ``--action_distribution=name``). The learner,
the inference workers and enjoy/eval all build distributions through
``model.action_distributions.get_action_distribution``, which asks this
registry first, so one registration changes all of them. The factory is
pickled to the worker processes with the rest of the registrations: register
module-level functions, not lambdas.
The defaults are imported lazily so this module stays import-cheap.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

# --action_distribution value that selects no named distribution: the space's own (registered or built-in)
DEFAULT_ACTION_DISTRIBUTION = "default"


@dataclass(frozen=True)
class ActionDistributionEntry:
    """A registered action distribution.

    ``make(action_space, raw_logits, action_mask)`` returns the distribution (an object with ``sample()``,
    ``log_prob(actions)``, ``entropy()``, ``kl_divergence(other)`` and, for deterministic evaluation, ``argmax()``);
    ``num_parameters(action_space)`` is the width of ``raw_logits`` when it differs from the space's built-in layout
    (``calc_num_action_parameters``), None otherwise.
    """

    make: Callable[..., Any]
    num_parameters: Callable[[gym.Space], int] | None = None


class ModelFactory:
    """Holds one make-function per model part; ``None`` means the library default."""

    def __init__(self) -> None:
        self.make_model_encoder_func: Callable | None = None
        self.make_model_core_func: Callable | None = None
        self.make_model_decoder_func: Callable | None = None
        self.make_actor_critic_func: Callable | None = None
        # space class or name -> entry (see register_action_distribution)
        self.action_distributions: dict[type | str, ActionDistributionEntry] = {}

    def register_encoder_factory(self, make_encoder_func: Callable) -> None:
        """``make_encoder_func(cfg, obs_space) -> Encoder``."""
        self.make_model_encoder_func = make_encoder_func

    def register_model_core_factory(self, make_core_func: Callable) -> None:
        """``make_core_func(cfg, core_input_size) -> ModelCore``."""
        self.make_model_core_func = make_core_func

    def register_decoder_factory(self, make_decoder_func: Callable) -> None:
        """``make_decoder_func(cfg, decoder_input_size) -> Decoder``."""
        self.make_model_decoder_func = make_decoder_func

    def register_actor_critic_factory(self, make_actor_critic_func: Callable) -> None:
        """``make_actor_critic_func(cfg, obs_space, action_space) -> ActorCritic``."""
        self.make_actor_critic_func = make_actor_critic_func

    def register_action_distribution(
        self,
        key: type[gym.Space] | str,
        make_distribution: Callable[..., Any],
        num_parameters: Callable[[gym.Space], int] | None = None,
    ) -> None:
        """Build the distributions of ``key`` with ``make_distribution(action_space, raw_logits, action_mask)``.

        ``key`` is a ``gymnasium.spaces.Space`` subclass (every action space of that type or a subclass, at the top
        level or inside a ``Tuple``) or a name that ``--action_distribution=name`` selects for the whole action
        space. ``num_parameters(action_space)`` gives the width of the raw parameters the policy head must emit when
        it is not the space's built-in one. Registering a key again replaces its entry.
        """
        if isinstance(key, str):
            if not key or key == DEFAULT_ACTION_DISTRIBUTION:
                raise ValueError(
                    f"register_action_distribution: {key!r} cannot name a distribution (it means the built-in one): "
                    "choose another name"
                )
        elif not (isinstance(key, type) and issubclass(key, gym.Space)):
            raise TypeError(
                f"register_action_distribution: the key must be a gymnasium.spaces.Space subclass (e.g. "
                f"gymnasium.spaces.Box) or a name, got {key!r}"
            )
        if not callable(make_distribution):
            raise TypeError(
                f"register_action_distribution({key!r}, ...) needs a callable "
                f"make_distribution(action_space, raw_logits, action_mask), got {make_distribution!r}"
            )
        self.action_distributions[key] = ActionDistributionEntry(make_distribution, num_parameters)

    def action_distribution_entry(
        self, action_space: gym.Space, name: str | None = None
    ) -> ActionDistributionEntry | None:
        """The entry registered under ``name`` (KeyError listing the names when there is none), or without a name
        the one registered for the class of ``action_space`` or its nearest base class; None: the built-in one."""
        if name is not None and name != DEFAULT_ACTION_DISTRIBUTION:
            entry = self.action_distributions.get(name)
            if entry is None:
                names = sorted(k for k in self.action_distributions if isinstance(k, str))
                raise KeyError(
                    f"--action_distribution={name} is not registered (registered names: {names or 'none'}): call "
                    f"global_model_factory().register_action_distribution({name!r}, make_distribution) before "
                    f"training, or pass --action_distribution={DEFAULT_ACTION_DISTRIBUTION}"
                )
            return entry
        for cls in type(action_space).__mro__:
            entry = self.action_distributions.get(cls)
            if entry is not None:
                return entry
        return None


_model_factory: ModelFactory | None = None


def global_model_factory() -> ModelFactory:
    """The process's model factory (carried to worker processes by ``algo.utils.context``)."""
    global _model_factory
    if _model_factory is None:
        _model_factory = ModelFactory()
    return _model_factory


def set_global_model_factory(factory: ModelFactory) -> None:
    global _model_factory
    _model_factory = factory
