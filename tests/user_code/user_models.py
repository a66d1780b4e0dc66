"""Model parts written the way users write them from Sample Factory 2's custom-model documentation.

Deliberately in the styles that speed tricks can trip over: ``.view`` on conv outputs, in-place activations, a core
and a decoder of one's own, a whole actor-critic, a custom action parameterisation, a ``__call__`` override and a
forward pre-hook. None of them knows anything about the library's fast paths. An action distribution registered by
name completes them.
"""

from __future__ import annotations

import os

import torch
from torch import Tensor, nn

from sample_factory.algo.utils.context import global_model_factory
from sample_factory.model.action_distributions import (
    CategoricalActionDistribution,
    get_action_distribution,
    sample_actions_log_probs,
)
from sample_factory.model.action_parameterization import ActionParameterizationBase
from sample_factory.model.actor_critic import ActorCritic, ActorCriticSharedWeights
from sample_factory.model.core import ModelCore
from sample_factory.model.decoder import Decoder
from sample_factory.model.encoder import Encoder
from sample_factory.model.model_utils import nonlinearity
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.torch_utils import calc_num_elements


def small_conv_head(channels: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(channels, 8, kernel_size=5, stride=2), nn.ELU(), nn.Conv2d(8, 16, kernel_size=3, stride=2), nn.ELU()
    )


class ViewConvEncoder(Encoder):
    """The documentation's conv encoder: a conv head, then ``x.view(-1, size)`` to flatten, then one linear layer."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        obs_shape = obs_space["obs"].shape
        self.conv_head = small_conv_head(obs_shape[0])
        self.conv_head_out_size = calc_num_elements(self.conv_head, obs_shape)
        self.encoder_out_size = 64
        self.mlp_layers = nn.Sequential(nn.Linear(self.conv_head_out_size, self.encoder_out_size), nn.ELU())

    def forward(self, obs_dict):
        x = self.conv_head(obs_dict["obs"])
        x = x.view(-1, self.conv_head_out_size)
        return self.mlp_layers(x)

    def get_out_size(self) -> int:
        return self.encoder_out_size


class InplaceConvEncoder(Encoder):
    """In-place activations everywhere: ``nn.ReLU(inplace=True)`` layers and ``relu_()`` on intermediate results."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        channels = obs_space["obs"].shape[0]
        self.conv1 = nn.Conv2d(channels, 8, kernel_size=5, stride=2)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, stride=2)
        self.act = nn.ReLU(inplace=True)
        self.out_size = 64
        self.fc = nn.Linear(calc_num_elements(nn.Sequential(self.conv1, self.conv2), obs_space["obs"].shape), 64)

    def forward(self, obs_dict):
        x = self.act(self.conv1(obs_dict["obs"]))
        x = self.conv2(x).relu_()
        return self.fc(torch.flatten(x, 1)).relu_()

    def get_out_size(self) -> int:
        return self.out_size


class PerKeyEncoder(Encoder):
    """Dict observations, one encoder per key: a conv net for ``pixels``, an MLP for ``vector``."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        pixels = obs_space["pixels"].shape
        self.encoders = nn.ModuleDict(
            {
                "pixels": nn.Sequential(small_conv_head(pixels[0]), nn.Flatten()),
                "vector": nn.Sequential(nn.Linear(obs_space["vector"].shape[0], 32), nn.Tanh()),
            }
        )
        self.out_size = calc_num_elements(self.encoders["pixels"], pixels) + 32

    def forward(self, obs_dict):
        return torch.cat([self.encoders[key](obs_dict[key]) for key in ("pixels", "vector")], dim=1)

    def get_out_size(self) -> int:
        return self.out_size


class GruCore(ModelCore):
    """A recurrent core of one's own around ``nn.GRU``: one step at a time, or packed sequences in the learner."""

    def __init__(self, cfg, input_size):
        super().__init__(cfg)
        self.core = nn.GRU(input_size, cfg.rnn_size)
        self.core_output_size = cfg.rnn_size

    def forward(self, head_output, rnn_states):
        one_step = torch.is_tensor(head_output)
        if one_step:
            head_output = head_output.unsqueeze(0)
        x, new_states = self.core(head_output, rnn_states.unsqueeze(0).contiguous())
        if one_step:
            x = x.squeeze(0)
        return x, new_states.squeeze(0)


class NormedDecoder(Decoder):
    """A decoder of one's own: linear, layer norm, activation."""

    def __init__(self, cfg, decoder_input_size):
        super().__init__(cfg)
        self.net = nn.Sequential(nn.Linear(decoder_input_size, 48), nn.LayerNorm(48), nonlinearity(cfg))

    def forward(self, core_output):
        return self.net(core_output)

    def get_out_size(self) -> int:
        return 48


class WholeActorCritic(ActorCritic):
    """A whole actor-critic: MLP body, value head and policy head, every forward stage written out."""

    def __init__(self, cfg, obs_space, action_space):
        super().__init__(obs_space, action_space, cfg)
        obs_size = obs_space["obs"].shape[0]
        self.body = nn.Sequential(nn.Linear(obs_size, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh())
        self.critic_linear = nn.Linear(64, 1)
        self.action_parameterization = self.get_action_parameterization(64)

    def forward_head(self, normalized_obs_dict):
        return self.body(normalized_obs_dict["obs"])

    def forward_core(self, head_output, rnn_states):
        return head_output, rnn_states

    def forward_tail(self, core_output, values_only, sample_actions, action_mask=None):
        result = TensorDict(values=self.critic_linear(core_output).squeeze(-1))
        if values_only:
            return result
        logits, self.last_action_distribution = self.action_parameterization(core_output, action_mask)
        result["action_logits"] = logits
        if sample_actions:
            result["actions"], result["log_prob_actions"] = sample_actions_log_probs(self.last_action_distribution)
        return result


class TemperatureParameterization(ActionParameterizationBase):
    """Action logits divided by a learned temperature."""

    def __init__(self, cfg, core_out_size, action_space):
        super().__init__(cfg, action_space)
        self.distribution_linear = nn.Linear(core_out_size, action_space.n)
        self.log_temperature = nn.Parameter(torch.zeros(1))

    def forward(self, actor_core_output, action_mask=None):
        logits = self.distribution_linear(actor_core_output) / self.log_temperature.exp()
        return logits, get_action_distribution(self.action_space, logits, action_mask)


class TemperatureActorCritic(ActorCriticSharedWeights):
    """The library's actor-critic with the policy head swapped for ``TemperatureParameterization``."""

    def get_action_parameterization(self, decoder_output_size: int) -> ActionParameterizationBase:
        return TemperatureParameterization(self.cfg, decoder_output_size, self.action_space)


def make_temperature_actor_critic(cfg, obs_space, action_space) -> ActorCritic:
    return TemperatureActorCritic(global_model_factory(), obs_space, action_space, cfg)


class DictCallEncoder(Encoder):
    """Takes the observation dict through ``__call__`` and hands ``forward`` the one tensor it needs."""

    def __init__(self, cfg, obs_space):
        super().__init__(cfg)
        self.mlp = nn.Sequential(nn.Linear(obs_space["obs"].shape[0], 64), nn.ELU())

    def __call__(self, obs_dict):
        return super().__call__(obs_dict["obs"])

    def forward(self, obs: Tensor) -> Tensor:
        return self.mlp(obs)

    def get_out_size(self) -> int:
        return 64


class HookedDecoder(Decoder):
    """A decoder whose layer expects a constant bias feature, appended by a forward pre-hook from its constructor."""

    def __init__(self, cfg, decoder_input_size):
        super().__init__(cfg)
        self.net = nn.Sequential(nn.Linear(decoder_input_size + 1, 32), nn.ELU())
        self.register_forward_pre_hook(lambda module, args: (nn.functional.pad(args[0], (0, 1), value=1.0),))

    def forward(self, core_output):
        return self.net(core_output)

    def get_out_size(self) -> int:
        return 32


# ---- an action distribution registered by name --------------------------------------------------------------------

# folder for MarkedCategorical's markers (set by user_script.py), and the phase that is running
MARKERS_ENV, PHASE_ENV = "USER_DISTRIBUTION_MARKERS", "USER_PHASE"
_marked: set[str] = set()


def _mark(use: str) -> None:
    """Leave ``<phase>__<process>__<use>`` in the markers folder, once per process: the proof that this process used
    the distribution. The process is named by the first word of its title (a worker's component, ``main`` else)."""
    import setproctitle

    folder = os.environ.get(MARKERS_ENV)
    title = setproctitle.getproctitle().split()[0]
    process = title if title.startswith(("learner_p", "inference_p", "rollout_w", "evaluator")) else "main"
    name = f"{os.environ.get(PHASE_ENV, '')}__{process}__{use}"
    if folder and name not in _marked:
        _marked.add(name)
        open(os.path.join(folder, name), "w").close()


class MarkedCategorical(CategoricalActionDistribution):
    """A categorical whose temperature is one more raw parameter of the head (so it has a width of its own)."""

    def __init__(self, action_space, raw_logits: Tensor, action_mask=None):
        temperature = nn.functional.softplus(raw_logits[:, -1:]) + 0.1
        super().__init__(raw_logits[:, :-1] / temperature, action_mask)
        _mark("built")

    def argmax(self) -> Tensor:
        _mark("argmax")
        return super().argmax()


def marked_categorical_parameters(action_space) -> int:
    return int(action_space.n) + 1
