"""Every Sample Factory 2 name that user scripts import exists here, with the parameters they pass.

A copy of the table in the project's API_SURFACE.md (the launcher's names are checked with their signatures in
tests/launcher, PettingZoo's wrapper's behaviour in tests/pettingzoo). Each name's behaviour is tested next to its
module (tests mirror the package); this file guards the surface as a whole, so a rename or a dropped parameter
breaks a test, not a user script.
"""

from __future__ import annotations

import importlib
import inspect

import pytest

# (module, name, parameter names a caller may pass, in order; None: not a callable with a fixed list)
NAMES = [
    ("sample_factory.algo.learning.rnn_utils", "build_core_out_from_seq", ["x_seq", "inverted_select_inds"]),
    ("sample_factory.algo.learning.rnn_utils", "build_rnn_inputs", ["x", "dones_cpu", "rnn_states", "T"]),
    ("sample_factory.algo.runners.runner", "AlgoObserver", None),
    (
        "sample_factory.algo.sampling.batched_sampling",
        "BatchedVectorEnvRunner",
        ["cfg", "env_info", "num_envs", "worker_idx", "split_idx", "buffer_mgr", "sampling_device", "training_info"],
    ),
    (
        "sample_factory.algo.sampling.non_batched_sampling",
        "NonBatchedVectorEnvRunner",
        ["cfg", "env_info", "num_envs", "worker_idx", "split_idx", "buffer_mgr", "sampling_device", "training_info"],
    ),
    ("sample_factory.algo.sampling.sampler", "SerialSampler", ["event_loop", "buffer_mgr", "param_servers"]),
    ("sample_factory.algo.sampling.sync_sampling_api", "SyncSamplingAPI", None),
    ("sample_factory.algo.utils.action_distributions", "sample_actions_log_probs", ["distribution"]),
    ("sample_factory.algo.utils.env_info", "obtain_env_info_in_a_separate_process", ["cfg"]),
    ("sample_factory.algo.utils.gymnasium_utils", "convert_space", ["space"]),
    ("sample_factory.algo.utils.make_env", "BatchedVecEnv", ["env"]),
    ("sample_factory.algo.utils.make_env", "SequentialVectorizeWrapper", ["envs"]),
    ("sample_factory.algo.utils.make_env", "make_env_func_batched", ["cfg", "env_config", "render_mode"]),
    ("sample_factory.algo.utils.misc", "EPISODIC", None),
    ("sample_factory.algo.utils.model_sharing", "ParameterServer", ["policy_id", "policy_versions", "serial_mode"]),
    ("sample_factory.algo.utils.multiprocessing_utils", "get_mp_ctx", ["serial"]),
    ("sample_factory.algo.utils.multiprocessing_utils", "get_mp_lock", ["mp_ctx"]),
    ("sample_factory.algo.utils.rl_utils", "samples_per_trajectory", ["trajectory"]),
    ("sample_factory.algo.utils.tensor_dict", "cat_tensordicts", ["lst"]),
    ("sample_factory.enjoy", "make_env", None),
    ("sample_factory.envs.env_utils", "get_default_reward_shaping", ["env"]),
    ("sample_factory.envs.env_utils", "num_env_steps", ["infos"]),
    ("sample_factory.envs.env_utils", "vizdoom_available", []),
    ("sample_factory.envs.pettingzoo_envs", "PettingZooParallelEnv", None),  # not in 2.1.1: no fixed parameters
    ("sample_factory.envs.env_wrappers", "RecordingWrapper", ["env", "record_to", "player_id"]),
    ("sample_factory.export_onnx", "OnnxExporter", None),
    ("sample_factory.export_onnx", "create_onnx_exporter", None),
    ("sample_factory.export_onnx", "generate_args", None),
    ("sample_factory.model.model_utils", "model_device", ["model"]),
    ("sample_factory.model.utils", "he_normal_init", None),
    ("sample_factory.model.utils", "orthogonal_init", None),
    ("sample_factory.utils.algo_version", "ALGO_VERSION", None),
    ("sample_factory.utils.dicts", "iterate_recursively", ["d"]),
    ("sample_factory.utils.dicts", "list_of_dicts_to_dict_of_lists", ["list_of_dicts"]),
    ("sample_factory.utils.network", "is_udp_port_available", ["port"]),
    ("sample_factory.utils.typing", "Env", None),
    ("sample_factory.utils.utils", "cores_for_worker_process", ["worker_idx", "num_workers", "cpu_count"]),
    ("sample_factory.utils.utils", "safe_ensure_dir_exists", ["path"]),
    ("sample_factory.utils.utils", "static_vars", ["kwargs"]),
    # present before, with Sample Factory 2's parameter names now
    (
        "sample_factory.algo.utils.running_mean_std",
        "RunningMeanStdInPlace",
        ["input_shape", "epsilon", "clip", "per_channel", "norm_only"],
    ),
    ("sample_factory.algo.utils.torch_utils", "calc_num_elements", ["module", "module_input_shape"]),
    ("sample_factory.envs.env_wrappers", "RewardScalingWrapper", ["env", "scaling_factor"]),
    ("sample_factory.utils.utils", "str2bool", ["v"]),
    (
        "sample_factory.algo.utils.env_info",
        "EnvInfo",
        [
            "obs_space",
            "action_space",
            "num_agents",
            "gpu_actions",
            "gpu_observations",
            "action_splits",
            "all_discrete",
            "frameskip",
            "reward_shaping_scheme",
            "env_info_protocol_version",
        ],
    ),
    (
        "sample_factory.algo.learning.learner",
        "Learner",
        ["cfg", "env_info", "policy_versions_tensor", "policy_id", "param_server"],
    ),
    ("sample_factory.algo.runners.runner", "Runner", ["cfg", "unique_name"]),
    ("sample_factory.train", "make_runner", ["cfg"]),
    ("sample_factory.train", "run_rl", ["cfg"]),
]


def _ids() -> list[str]:
    return [f"{module}.{name}" for module, name, _ in NAMES]


@pytest.mark.parametrize(("module", "name", "params"), NAMES, ids=_ids())
def test_name_exists_with_its_parameters(module: str, name: str, params: list[str] | None) -> None:
    obj = getattr(importlib.import_module(module), name)
    if params is None:
        return
    signature = inspect.signature(obj)
    names = [p.name for p in signature.parameters.values()]
    assert names[: len(params)] == params, f"{module}.{name}{signature}: expected parameters {params} first"


def test_constants_have_sample_factory_2_values() -> None:
    from sample_factory.algo.utils.misc import EPISODIC
    from sample_factory.utils.algo_version import ALGO_VERSION

    assert EPISODIC == "episodic" and ALGO_VERSION == 83


def test_runner_hooks_of_the_observer_interface() -> None:
    from sample_factory.algo.runners.runner import AlgoObserver, Runner

    hooks = ["on_init", "on_connect_components", "on_start", "on_training_step", "extra_summaries", "on_stop"]
    assert all(callable(getattr(AlgoObserver, hook)) for hook in hooks)
    for method in ("init", "run", "register_observer", "register_episodic_stats_handler"):
        assert callable(getattr(Runner, method))


def test_env_subclass_base_is_a_gymnasium_env() -> None:
    import gymnasium

    from sample_factory.utils.typing import Env

    class MyEnv(Env):
        pass

    assert isinstance(MyEnv(), gymnasium.Env)
