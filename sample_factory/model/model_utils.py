"""Small building blocks shared by every part of the actor-critic.

Kept free of any dependency on the rest of the model package so encoders, cores, decoders and user code can all
import it without cycles.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

from sample_factory.utils.typing import Config

_ACTIVATIONS: dict[str, type[nn.Module]] = {"elu": nn.ELU, "relu": nn.ReLU, "tanh": nn.Tanh}


class ModelModule(nn.Module):
    """Base of every model part: keeps the config and reports the width of its output.

    The actor-critic wires parts together by their ``get_out_size()``, which is what lets a user swap in any
    encoder, core or decoder without the others knowing.
    """

    def __init__(self, cfg: Config) -> None:
        super().__init__()
        self.cfg = cfg

    def get_out_size(self) -> int:
        """Number of features in the last dimension of this module's output."""
        raise NotImplementedError(f"{type(self).__name__} must implement get_out_size()")


def nonlinearity(cfg: Config, inplace: bool = False) -> nn.Module:
    """The activation chosen by ``--nonlinearity`` (elu, relu or tanh)."""
    name = cfg.nonlinearity
    if name not in _ACTIVATIONS:
        raise ValueError(f"--nonlinearity={name!r} is not supported, choose one of {sorted(_ACTIVATIONS)}")
    if name == "tanh":
        return nn.Tanh()  # nn.Tanh has no inplace variant
    return _ACTIVATIONS[name](inplace=inplace)


def create_mlp(layer_sizes: list[int], input_size: int, activation: nn.Module) -> nn.Module:
    """Linear layers of the given widths, each followed by ``activation``.

    An empty ``layer_sizes`` gives an empty ``nn.Sequential``, i.e. the identity, so a flag like
    ``--decoder_mlp_layers=[]`` simply removes the MLP. ``activation`` carries no parameters, so one instance can be
    reused after every layer.
    """
    layers: list[nn.Module] = []
    in_size = input_size
    for size in layer_sizes:
        layers.extend([nn.Linear(in_size, size), activation])
        in_size = size
    return nn.Sequential(*layers)


def fc_layer(in_features: int, out_features: int, bias: bool = True, spec_norm: bool = False) -> nn.Module:
    """A linear layer; with ``spec_norm`` its weight is divided by its largest singular value on every forward.

    Spectral normalisation (Miyato et al., 2018) bounds the layer's Lipschitz constant, which some users apply to
    value heads or discriminators to keep their outputs from exploding.
    """
    layer = nn.Linear(in_features, out_features, bias=bias)
    if spec_norm:
        return torch.nn.utils.parametrizations.spectral_norm(layer)
    return layer


def mlp_out_size(layer_sizes: list[int], input_size: int) -> int:
    """Width of the output of ``create_mlp(layer_sizes, input_size, ...)``."""
    return layer_sizes[-1] if layer_sizes else input_size


def get_rnn_size(cfg: Config) -> int:
    """Width of the flat per-agent ``rnn_states`` buffer the model expects.

    With an RNN: ``rnn_size * rnn_num_layers``, doubled for an LSTM (hidden and cell state), doubled again when the
    actor and the critic have separate weights (each has its own core). Without an RNN the buffer is a single
    placeholder column that the model passes through unchanged.
    """
    if not cfg.use_rnn:
        return 1
    size = cfg.rnn_size * cfg.rnn_num_layers
    if cfg.rnn_type == "lstm":
        size *= 2
    if not cfg.actor_critic_share_weights:
        size *= 2
    return size


_RNN_TYPES = (nn.GRU, nn.LSTM, nn.GRUCell, nn.LSTMCell)

MatrixInit = Callable[[Tensor], object]


def _matrix_init(scheme: str, gain: float) -> MatrixInit:
    if scheme == "orthogonal":
        return lambda weight: nn.init.orthogonal_(weight, gain=gain)
    if scheme == "xavier_uniform":
        return lambda weight: nn.init.xavier_uniform_(weight, gain=gain)
    known = "orthogonal, xavier_uniform, torch_default"
    raise ValueError(f"--policy_initialization={scheme!r} is not supported, choose one of: {known}")


def _init_rnn(rnn: nn.Module, init_matrix: MatrixInit) -> None:
    """Each gate's block of an RNN weight matrix is initialised on its own.

    Torch stacks the gates' matrices (3 for a GRU, 4 for an LSTM) into one tall weight; an orthogonal init of the
    whole stack would not make each gate's recurrent matrix orthogonal, which is what keeps gradients through time
    well-conditioned.
    """
    num_gates = 4 if isinstance(rnn, (nn.LSTM, nn.LSTMCell)) else 3
    with torch.no_grad():
        for name, param in rnn.named_parameters():
            if name.startswith("weight"):
                for gate_weight in param.chunk(num_gates, dim=0):
                    init_matrix(gate_weight)
            elif name.startswith("bias"):
                param.zero_()


def init_layer_weights(layer: nn.Module, init_matrix: MatrixInit) -> None:
    """Apply ``init_matrix`` to the weights of a Linear, Conv or RNN layer (per gate) and zero its biases.

    Layers of other types (activations, normalisers, user modules without weights) are not touched, so this is meant
    for ``module.apply``. The one place that decides which layers an initialisation scheme reaches.
    """
    if isinstance(layer, _LINEAR_TYPES):
        with torch.no_grad():
            init_matrix(layer.weight)
            if layer.bias is not None:
                layer.bias.zero_()
    elif isinstance(layer, _RNN_TYPES):
        _init_rnn(layer, init_matrix)


_LINEAR_TYPES = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)
# attribute set on the layers of the library's own MLPs, plain conv encoders and RNN cores (see keep_torch_init)
_KEEPS_TORCH_INIT = "_keeps_torch_init"


def keep_torch_init(module: nn.Module) -> nn.Module:
    """Mark every layer of ``module`` to keep torch's own weight initialisation under ``--policy_initialization``.

    Sample Factory 2.1.1 applies the initialisation scheme only to the layers it sees as plain ``nn.Linear`` /
    ``nn.Conv2d`` modules: the policy and value heads, the ResNet encoder and users' own layers. The layers of its
    MLP encoder, plain conv encoders (convnet_simple, convnet_atari, convnet_impala), MLP decoder and RNN core keep
    torch's default weights (their Linear and conv biases are still zeroed; the RNN's biases stay as torch made
    them), which is what its checkpoints show. The library's same parts are marked with this so that the same flags
    start training from the same weight distributions: with orthogonal weights in every layer the features of a
    Doom frame are several times larger and the first updates change the policy about ten times as much.
    Returns ``module``.
    """
    for layer in module.modules():
        setattr(layer, _KEEPS_TORCH_INIT, True)
    return module


def keeps_torch_init(layer: nn.Module) -> bool:
    """Whether ``layer`` was marked by ``keep_torch_init``."""
    return bool(getattr(layer, _KEEPS_TORCH_INIT, False))


def initialize_weights(layer: nn.Module, scheme: str, gain: float) -> None:
    """Init one layer per ``--policy_initialization`` / ``--policy_init_gain``; meant for ``module.apply``.

    Linear and conv biases start at zero under every scheme. Their weights, and RNN gate weights (gate by gate,
    with zero biases), get ``scheme``, except in the library's layers marked by ``keep_torch_init``, which keep
    torch's weights (and an RNN's biases). ``torch_default`` keeps torch's weights everywhere. Layers of other types
    (normalisers, user modules without weights) are not touched.
    """
    if scheme != "torch_default":
        init_matrix = _matrix_init(scheme, gain)  # checks the name first, whatever the layer
        if not keeps_torch_init(layer):
            init_layer_weights(layer, init_matrix)
            return
    if isinstance(layer, _LINEAR_TYPES) and layer.bias is not None:
        with torch.no_grad():
            layer.bias.zero_()


def model_device(model: nn.Module) -> torch.device | None:
    """The device of ``model``'s first parameter (or, with no parameters, first buffer); None if it has neither.

    Models are moved to one device as a whole, so the first tensor stands for all of them; a model with no tensors
    (e.g. only activations) lives nowhere and works on any device.
    """
    for tensor in model.parameters():
        return tensor.device
    for tensor in model.buffers():
        return tensor.device
    return None
