"""Registry of the functions that build each part of the actor-critic.

User code swaps in its own encoder, core, decoder or whole actor-critic by
registering a factory function on ``global_model_factory()`` before training.
The defaults are imported lazily so this module stays import-cheap.
"""

from __future__ import annotations

from collections.abc import Callable


class ModelFactory:
    """Holds one make-function per model part; ``None`` means the library default."""

    def __init__(self) -> None:
        self.make_model_encoder_func: Callable | None = None
        self.make_model_core_func: Callable | None = None
        self.make_model_decoder_func: Callable | None = None
        self.make_actor_critic_func: Callable | None = None

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
