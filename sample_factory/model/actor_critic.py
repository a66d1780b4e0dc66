"""The actor-critic: observation normalisation, encoder -> core -> decoder, then a value head and a policy head.

The forward pass is split in three so each process runs only what it needs: the inference worker calls
``forward`` one step at a time, the learner runs ``forward_head`` over a whole batch, ``forward_core`` over packed
sequences (BPTT), and ``forward_tail`` over the flattened core outputs.

Shapes (``B`` agents or samples): ``rnn_states`` ``[B, get_rnn_size(cfg)]``; outputs of ``forward``:
``values`` ``[B]``, ``action_logits`` ``[B, num_action_parameters]``, ``actions`` in the layout of the action
distribution (``[B]`` int64 for Discrete, ``[B, d]`` for Box, ``[B, num_actions]`` for Tuple/MultiDiscrete),
``log_prob_actions`` ``[B]``, ``new_rnn_states`` ``[B, get_rnn_size(cfg)]``.
"""

from __future__ import annotations

import gymnasium as gym
import torch
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence

from sample_factory.model.action_distributions import ActionDistribution, buffer_actions, sampled_action_logits
from sample_factory.model.action_parameterization import ActionParameterizationBase, make_action_parameterization
from sample_factory.model.autoregressive_head import ActionParameterizationAutoregressive
from sample_factory.model.core import CoreInput, ModelCore, default_make_core_func
from sample_factory.model.decoder import Decoder, default_make_decoder_func
from sample_factory.model.encoder import (
    ACTION_MASK_KEY,
    Encoder,
    as_dict_space,
    default_make_encoder_func,
    is_image_space,
)
from sample_factory.model.model_factory import ModelFactory, global_model_factory
from sample_factory.model.model_utils import ModelModule, initialize_weights
from sample_factory.model.running_mean_std import (
    ObsNormalizer,
    RunningMeanStdDictInPlace,
    RunningMeanStdInPlace,
    normalize_pixels_blockwise,
    normalizes_blockwise,
)
from sample_factory.utils.tensor_dict import TensorDict
from sample_factory.utils.typing import ActionSpace, Config, ObsSpace

ObsDict = dict[str, Tensor]


def obs_space_without_action_mask(obs_space: ObsSpace) -> ObsSpace:
    """``obs_space`` without its ``"action_mask"`` key: the part of the observation an encoder should see.

    The action mask only restricts the action distribution; an encoder built over it would learn from it as if it
    were an observation. A space without that key (a Box, or a Dict without it) is returned as it is.
    """
    if isinstance(obs_space, gym.spaces.Dict) and ACTION_MASK_KEY in obs_space.spaces:
        return gym.spaces.Dict({key: space for key, space in obs_space.spaces.items() if key != ACTION_MASK_KEY})
    return obs_space


def policy_output_shapes(num_actions: int, num_action_distribution_parameters: int) -> list[tuple[str, list[int]]]:
    """Per-step shapes (without batch dims) of what the inference worker writes into the trajectory buffers.

    An action occupies ``num_actions`` numbers; ``forward`` returns Discrete actions as ``[B]``, which fills a
    ``[B, 1]`` slot after ``unsqueeze(-1)``.
    """
    return [
        ("actions", [num_actions]),
        ("action_logits", [num_action_distribution_parameters]),
        ("log_prob_actions", []),
        ("values", []),
        ("policy_version", []),
    ]


class ActorCritic(ModelModule):
    """Base of actor-critics: normalisers, the policy/value output logic and weight init.

    Subclasses build the encoder/core/decoder and implement ``forward_head``, ``forward_core``, ``forward_tail``.
    """

    def __init__(self, obs_space: ObsSpace, action_space: ActionSpace, cfg: Config) -> None:
        super().__init__(cfg)
        self.obs_space = as_dict_space(obs_space)
        # keys that --obs_subtract_mean / --obs_scale apply to (CHW images)
        self._image_keys = frozenset(key for key, space in self.obs_space.spaces.items() if is_image_space(space))
        self.action_space = action_space
        # the normalisers' state dict keys and shapes are Sample Factory 2's (statistics of returns as a (1,) vector)
        self.obs_normalizer: ObsNormalizer | None = None
        if cfg.normalize_input:
            self.obs_normalizer = ObsNormalizer(self.obs_space, cfg.normalize_input_keys)
        self.returns_normalizer: RunningMeanStdInPlace | None = None
        if cfg.normalize_returns:
            self.returns_normalizer = RunningMeanStdInPlace((1,))
        self.last_action_distribution: ActionDistribution | None = None

    # ---- observations -------------------------------------------------------------------------------------------

    def _normalized_keys(self) -> set[str]:
        return set() if self.obs_normalizer is None else set(self.obs_normalizer.running_mean_std.keys())

    def _preprocess_obs(self, key: str, x: Tensor, needs_copy: bool) -> Tensor:
        """float32, then for image keys ``(x - --obs_subtract_mean) / --obs_scale``; a copy if the normaliser will
        write to it. Vector keys (Doom's measurements, say) are only cast: the two flags describe pixels."""
        y = x.float()  # uint8 images become a new float tensor here: later steps may then work in place
        owned = y is not x
        if key not in self._image_keys:
            return y.clone() if needs_copy and not owned else y
        if self.cfg.obs_subtract_mean != 0.0:
            y = y.sub_(self.cfg.obs_subtract_mean) if owned else y - self.cfg.obs_subtract_mean
            owned = True
        if self.cfg.obs_scale != 1.0:
            y = y.div_(self.cfg.obs_scale) if owned else y / self.cfg.obs_scale
            owned = True
        if needs_copy and not owned:
            y = y.clone()
        return y

    def normalize_obs(self, obs_dict: ObsDict | Tensor) -> ObsDict:
        """A new dict of float observations: subtract/scale, then running mean/std normalisation.

        The caller's tensors are never modified (they are often views of shared buffers). The running statistics
        are updated only in ``train()`` mode. ``action_mask`` is passed through untouched. A bare tensor is treated
        as the ``"obs"`` key.
        """
        if isinstance(obs_dict, Tensor):
            obs_dict = {"obs": obs_dict}
        normalized_keys = self._normalized_keys()
        blockwise = self._blockwise_keys(obs_dict)
        normalized = {}
        for key, x in obs_dict.items():
            if key == ACTION_MASK_KEY:
                normalized[key] = x
            elif key in blockwise:
                normalized[key] = self._normalize_pixels_blockwise(key, x)
            else:
                normalized[key] = self._preprocess_obs(key, x, key in normalized_keys)
        if self.obs_normalizer is None:
            return normalized
        if not blockwise:
            return self.obs_normalizer(normalized)
        for key, normalizer in self.obs_normalizer.running_mean_std.items():  # what its forward does, minus those
            if key not in blockwise:
                normalized[key] = normalizer(normalized[key])
        return normalized

    def _blockwise_keys(self, obs_dict: ObsDict) -> frozenset[str]:
        """Keys whose preprocessing and train-mode normalisation ``normalize_pixels_blockwise`` can do in one go.

        Only where this class's own preprocessing and the library's own normalisers would run (a subclass that
        overrides ``_preprocess_obs`` or an ``obs_normalizer`` of another class keeps the step-by-step path), for
        integer image batches that the normaliser updates its statistics from (the learner's batches).
        """
        normalizer = self.obs_normalizer
        if (
            normalizer is None
            or type(normalizer) is not ObsNormalizer
            or type(normalizer.running_mean_std) is not RunningMeanStdDictInPlace
            or not normalizer.training
            or type(self)._preprocess_obs is not ActorCritic._preprocess_obs
            or torch.jit.is_scripting()
        ):
            return frozenset()
        return frozenset(
            key
            for key, module in normalizer.running_mean_std.items()
            if key in obs_dict and normalizes_blockwise(module, obs_dict[key])
        )

    def _normalize_pixels_blockwise(self, key: str, x: Tensor) -> Tensor:
        """``_preprocess_obs`` then the key's normaliser in train mode, in cache-sized blocks (same result)."""
        image = key in self._image_keys
        subtract = self.cfg.obs_subtract_mean if image else 0.0
        scale = self.cfg.obs_scale if image else 1.0
        return normalize_pixels_blockwise(self.obs_normalizer.running_mean_std[key], x, subtract, scale)

    # ---- forward ------------------------------------------------------------------------------------------------

    def forward_head(self, normalized_obs_dict: ObsDict) -> Tensor:
        """Encoder features ``[B, F]``."""
        raise NotImplementedError

    def forward_core(self, head_output: CoreInput, rnn_states: Tensor) -> tuple[CoreInput, Tensor]:
        """``(core_output, new_rnn_states)``; a ``PackedSequence`` in gives a ``PackedSequence`` out."""
        raise NotImplementedError

    def forward_tail(
        self, core_output: Tensor, values_only: bool, sample_actions: bool, action_mask: Tensor | None = None
    ) -> TensorDict:
        """Value (and policy) outputs from core outputs ``[B, core_out]``."""
        raise NotImplementedError

    def forward(
        self,
        normalized_obs_dict: ObsDict,
        rnn_states: Tensor,
        values_only: bool = False,
        action_mask: Tensor | None = None,
    ) -> TensorDict:
        """One step: the ``forward_tail`` outputs (actions sampled) plus ``new_rnn_states``."""
        head_output = self.forward_head(normalized_obs_dict)
        core_output, new_rnn_states = self.forward_core(head_output, rnn_states)
        result = self.forward_tail(core_output, values_only, sample_actions=True, action_mask=action_mask)
        result["new_rnn_states"] = new_rnn_states
        return result

    def _tail_outputs(
        self,
        values: Tensor,
        actor_output: Tensor | None,
        values_only: bool,
        sample_actions: bool,
        action_mask: Tensor | None,
    ) -> TensorDict:
        """Assemble the ``forward_tail`` TensorDict from the value head output and the actor decoder output."""
        result = TensorDict(values=values.squeeze(-1))  # [B]
        if values_only:
            return result
        action_logits, self.last_action_distribution = self.action_parameterization(actor_output, action_mask)
        result["action_logits"] = action_logits  # [B, num_action_parameters]
        if sample_actions:
            actions, result["log_prob_actions"] = self._sample_actions(self.last_action_distribution)
            result["actions"] = actions
            # an autoregressive head's logits depend on the sampled prefix: store those the actions came from
            result["action_logits"] = sampled_action_logits(self.last_action_distribution, action_logits)
        return result

    @staticmethod
    def _sample_actions(distribution: ActionDistribution) -> tuple[Tensor, Tensor]:
        """Actions in the buffers' layout (``[B]`` for Discrete, see ``buffer_actions``) and their log-probs ``[B]``.

        Actions are data, not a function of the weights: detaching keeps a reparameterised sample from cancelling
        the gradient of its own log-prob. (Not ``torch.no_grad()``: distributions may cache grad-free tensors then.)
        """
        actions = distribution.sample().detach()
        return buffer_actions(distribution, actions), distribution.log_prob(actions)

    def get_action_parameterization(
        self, decoder_output_size: int
    ) -> ActionParameterizationBase | ActionParameterizationAutoregressive:
        """The policy head (``--action_head``); override to use a custom one."""
        return make_action_parameterization(self.cfg, decoder_output_size, self.action_space)

    def action_distribution(self) -> ActionDistribution | None:
        """The action distribution of the last ``forward``/``forward_tail`` that computed the policy."""
        return self.last_action_distribution

    policy_output_shapes = staticmethod(policy_output_shapes)

    # ---- misc ---------------------------------------------------------------------------------------------------

    def initialize_weights(self, layer: nn.Module) -> None:
        """Per-layer init for ``self.apply``, following ``--policy_initialization`` and ``--policy_init_gain``."""
        initialize_weights(layer, self.cfg.policy_initialization, self.cfg.policy_init_gain)

    def summaries(self) -> dict[str, float]:
        """Scalars for TensorBoard: the mean policy std for Gaussian (parts of) action spaces."""
        learned = getattr(getattr(self, "action_parameterization", None), "learned_stddev", None)
        if learned is not None:
            return {"policy_stddev": learned.detach().exp().mean().item()}
        stds = _gaussian_stds(self.last_action_distribution)
        if not stds:
            return {}
        return {"policy_stddev": torch.cat([s.detach().flatten() for s in stds]).mean().item()}

    def model_to_device(self, device: torch.device | str) -> None:
        """Move the whole model; a hook for models that keep some parts elsewhere."""
        self.to(device)

    def device_for_input_tensor(self, input_tensor_name: str) -> torch.device:
        """Where the observation ``input_tensor_name`` must be before ``normalize_obs``."""
        return next(self.parameters()).device

    def type_for_input_tensor(self, input_tensor_name: str) -> torch.dtype:
        """The dtype observations are converted to by ``normalize_obs``."""
        return torch.float32


def _gaussian_stds(distribution: object) -> list[Tensor]:
    """Standard deviations of a Gaussian distribution or of the Gaussian components of a tuple distribution."""
    if distribution is None:
        return []
    if hasattr(distribution, "stds"):
        return [distribution.stds]
    return [std for component in getattr(distribution, "components", []) for std in _gaussian_stds(component)]


def _make_parts(factory: ModelFactory, cfg: Config, obs_space: ObsSpace) -> tuple[Encoder, ModelCore, Decoder]:
    """Encoder, core and decoder from the registered factory functions, or the library defaults."""
    encoder = (factory.make_model_encoder_func or default_make_encoder_func)(cfg, obs_space)
    core = (factory.make_model_core_func or default_make_core_func)(cfg, encoder.get_out_size())
    decoder = (factory.make_model_decoder_func or default_make_decoder_func)(cfg, core.get_out_size())
    return encoder, core, decoder


class ActorCriticSharedWeights(ActorCritic):
    """One encoder, core and decoder feed both the value head and the policy head (``--actor_critic_share_weights``)."""

    def __init__(self, model_factory: ModelFactory, obs_space: ObsSpace, action_space: ActionSpace, cfg: Config):
        super().__init__(obs_space, action_space, cfg)
        self.encoder, self.core, self.decoder = _make_parts(model_factory, cfg, self.obs_space)
        decoder_out_size = self.decoder.get_out_size()
        self.critic_linear = nn.Linear(decoder_out_size, 1)
        self.action_parameterization = self.get_action_parameterization(decoder_out_size)
        self.apply(self.initialize_weights)

    def get_out_size(self) -> int:
        return self.decoder.get_out_size()

    def forward_head(self, normalized_obs_dict: ObsDict) -> Tensor:
        return self.encoder(normalized_obs_dict)  # [B, encoder_out]

    def forward_core(self, head_output: CoreInput, rnn_states: Tensor) -> tuple[CoreInput, Tensor]:
        return self.core(head_output, rnn_states)

    def forward_tail(
        self, core_output: Tensor, values_only: bool, sample_actions: bool, action_mask: Tensor | None = None
    ) -> TensorDict:
        decoder_output = self.decoder(core_output)  # [B, decoder_out]
        values = self.critic_linear(decoder_output)  # [B, 1]
        return self._tail_outputs(values, decoder_output, values_only, sample_actions, action_mask)


def _split_features(x: CoreInput, sizes: list[int]) -> list[CoreInput]:
    """Split features along the last dim; packed sequences keep their batch layout."""
    if isinstance(x, PackedSequence):
        return [x._replace(data=part) for part in x.data.split(sizes, dim=1)]
    return list(x.split(sizes, dim=1))


def _cat_features(parts: list[CoreInput]) -> CoreInput:
    if isinstance(parts[0], PackedSequence):
        return parts[0]._replace(data=torch.cat([p.data for p in parts], dim=1))
    return torch.cat(parts, dim=1)


class ActorCriticSeparateWeights(ActorCritic):
    """Separate encoder, core and decoder for the actor and the critic (``--actor_critic_share_weights=False``).

    The two halves travel together: head and core outputs are ``[actor | critic]`` concatenated along the feature
    dim, and with an RNN ``rnn_states`` is ``[actor states | critic states]`` (hence twice the shared size, see
    ``get_rnn_size``). Without an RNN both identity cores get the placeholder states and return them unchanged.
    """

    def __init__(self, model_factory: ModelFactory, obs_space: ObsSpace, action_space: ActionSpace, cfg: Config):
        super().__init__(obs_space, action_space, cfg)
        self.actor_encoder, self.actor_core, self.actor_decoder = _make_parts(model_factory, cfg, self.obs_space)
        self.critic_encoder, self.critic_core, self.critic_decoder = _make_parts(model_factory, cfg, self.obs_space)
        self.critic_linear = nn.Linear(self.critic_decoder.get_out_size(), 1)
        self.action_parameterization = self.get_action_parameterization(self.actor_decoder.get_out_size())
        self.apply(self.initialize_weights)

    def get_out_size(self) -> int:
        return self.actor_decoder.get_out_size()

    def forward_head(self, normalized_obs_dict: ObsDict) -> Tensor:
        actor_head = self.actor_encoder(normalized_obs_dict)
        critic_head = self.critic_encoder(normalized_obs_dict)
        return torch.cat([actor_head, critic_head], dim=1)  # [B, actor_encoder_out + critic_encoder_out]

    def _split_states(self, rnn_states: Tensor) -> tuple[Tensor, Tensor]:
        if not self.cfg.use_rnn:
            return rnn_states, rnn_states
        actor_states, critic_states = rnn_states.chunk(2, dim=1)
        return actor_states, critic_states

    def forward_core(self, head_output: CoreInput, rnn_states: Tensor) -> tuple[CoreInput, Tensor]:
        sizes = [self.actor_encoder.get_out_size(), self.critic_encoder.get_out_size()]
        actor_head, critic_head = _split_features(head_output, sizes)
        actor_states, critic_states = self._split_states(rnn_states)
        actor_out, new_actor_states = self.actor_core(actor_head, actor_states)
        critic_out, new_critic_states = self.critic_core(critic_head, critic_states)
        new_rnn_states = new_actor_states
        if self.cfg.use_rnn:
            new_rnn_states = torch.cat([new_actor_states, new_critic_states], dim=1)
        return _cat_features([actor_out, critic_out]), new_rnn_states

    def forward_tail(
        self, core_output: Tensor, values_only: bool, sample_actions: bool, action_mask: Tensor | None = None
    ) -> TensorDict:
        sizes = [self.actor_core.get_out_size(), self.critic_core.get_out_size()]
        actor_core_out, critic_core_out = core_output.split(sizes, dim=1)
        values = self.critic_linear(self.critic_decoder(critic_core_out))  # [B, 1]
        actor_output = None if values_only else self.actor_decoder(actor_core_out)
        return self._tail_outputs(values, actor_output, values_only, sample_actions, action_mask)


def default_make_actor_critic_func(cfg: Config, obs_space: ObsSpace, action_space: ActionSpace) -> ActorCritic:
    """Shared or separate weights per ``--actor_critic_share_weights``, parts from ``global_model_factory()``."""
    cls = ActorCriticSharedWeights if cfg.actor_critic_share_weights else ActorCriticSeparateWeights
    return cls(global_model_factory(), obs_space, action_space, cfg)


def create_actor_critic(cfg: Config, obs_space: ObsSpace, action_space: ActionSpace) -> ActorCritic:
    """The actor-critic for this env: a registered ``make_actor_critic_func`` if any, else the default.

    A plain (non-Dict) observation space is passed on as ``Dict({"obs": space})``, the layout the samplers feed.
    """
    obs_space = as_dict_space(obs_space)
    make_func = global_model_factory().make_actor_critic_func or default_make_actor_critic_func
    return make_func(cfg, obs_space, action_space)
