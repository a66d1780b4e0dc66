"""Weight initialisers for one layer, to pass to ``module.apply`` in custom encoders, cores and decoders.

Thin front ends of the initialisation the actor-critic itself uses (``model_utils.init_layer_weights``): the same
layer types are reached (Linear, Conv, RNN gates one by one) and biases are zeroed, so a custom model initialised
with these behaves like the built-in ones. Usage: ``self.apply(orthogonal_init)`` or
``self.apply(functools.partial(orthogonal_init, gain=math.sqrt(2)))``.
"""

from __future__ import annotations

from torch import nn

from sample_factory.model.model_utils import init_layer_weights


def orthogonal_init(module: nn.Module, gain: float = 1.0) -> None:
    """Orthogonal weights scaled by ``gain`` (Saxe et al. 2014), zero biases; other layer types are left alone.

    Orthogonal matrices preserve the norm of activations and gradients through linear layers, which is why it is the
    default for RL policies (``--policy_initialization=orthogonal``).
    """
    init_layer_weights(module, lambda weight: nn.init.orthogonal_(weight, gain=gain))


def he_normal_init(module: nn.Module) -> None:
    """He (Kaiming) normal weights, std ``sqrt(2 / fan_in)`` (He et al. 2015), zero biases; others left alone.

    Keeps the activation variance constant through ReLU layers; the usual choice for deep ReLU conv encoders.
    Like the other initialisers here it takes the one layer ``module.apply`` passes, and assumes ReLU-family
    activations.
    """
    init_layer_weights(module, lambda weight: nn.init.kaiming_normal_(weight, mode="fan_in", nonlinearity="relu"))
