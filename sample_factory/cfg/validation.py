"""Checks that reject a bad configuration before any process starts.

A wrong batch size or an unwritable folder found after the workers have spawned costs minutes and leaves a
confusing traceback in some child process; found here it costs nothing and the message names the flag and
the fix. :func:`validate_cfg` needs only the config; :func:`verify_cfg` and :func:`require_cfg_fits_env` also
need the env's spaces.
"""

from __future__ import annotations

import importlib
import os
import re
import tempfile
from typing import Any

from gymnasium import spaces

from sample_factory.cfg.flags_extras import evaluation_flag
from sample_factory.cfg.value_ranges import value_range_problems
from sample_factory.envs.action_conversion import rows_are_env_actions
from sample_factory.envs.spaces.layout import autoregressive_sub_spaces
from sample_factory.utils.flags import flag_value
from sample_factory.utils.typing import Config
from sample_factory.utils.utils import log

# Flags that count things: zero or a negative value can never work.
_POSITIVE_FLAGS = (
    "num_batches_per_epoch",
    "batch_size",
    "rollout",
    "num_workers",
    "num_envs_per_worker",
    "worker_num_splits",
    "num_policies",
    "num_epochs",
)


class ConfigError(ValueError):
    """A configuration that cannot work; the message names the flag(s) at fault and how to fix them."""


def effective_recurrence(cfg: Config) -> int:
    """The BPTT length actually used: ``--recurrence=-1`` means a whole rollout with an RNN and 1 without."""
    if cfg.recurrence == -1:
        return cfg.rollout if cfg.use_rnn else 1
    return cfg.recurrence


def validate_cfg(cfg: Config) -> None:
    """Raise :class:`ConfigError` listing every problem found; may switch ``cfg.device`` from gpu to cpu.

    The GPU fallback is a warning rather than an error so that a command line written for a GPU machine
    still runs (slowly) on a laptop or in CI.
    """
    problems = _choice_problems(cfg) + _range_problems(cfg)
    if not problems:  # divisibility checks would divide by zero on the values rejected above
        problems += _divisibility_problems(cfg)
    problems += _sampling_problems(cfg)
    problems += _evaluation_metric_problems(cfg)
    problems += _experiment_dir_problems(cfg)
    problems += unavailable_feature_problems(cfg)
    if problems:
        raise _config_error(problems)
    _fall_back_to_cpu_if_no_cuda(cfg)
    _warn_about_flags_without_effect(cfg)


# Parameters of --with_pbt: they only take effect when population-based training runs.
PBT_TUNING_FLAGS = (
    "pbt_period_env_steps",
    "pbt_start_mutation",
    "pbt_replace_fraction",
    "pbt_mutation_rate",
    "pbt_replace_reward_gap",
    "pbt_replace_reward_gap_absolute",
    "pbt_optimize_gamma",
    "pbt_target_objective",
    "pbt_perturb_min",
    "pbt_perturb_max",
)


# Values of --pixel_format that the families understand (the flag declares no choices, to keep SF2's declaration).
PIXEL_FORMATS = ("CHW", "HWC")


def _choice_problems(cfg: Config) -> list[str]:
    """Flags that accept any string on the command line but have only a few meaningful values."""
    problems = []
    algo = cfg.algo
    if algo != "APPO":
        problems.append(
            f"--algo={algo}: only APPO is implemented (asynchronous PPO, with V-trace via --with_vtrace=True); "
            f"pass --algo=APPO or leave the flag out"
        )
    pixel_format = cfg.pixel_format
    if pixel_format not in PIXEL_FORMATS:
        problems.append(
            f"--pixel_format={pixel_format} is not a layout: pass --pixel_format=CHW (what the built-in conv encoders "
            f"need) or --pixel_format=HWC (channels last, for custom encoders)"
        )
    return problems


def unavailable_feature_problems(cfg: Config, uploads_to_hub: bool = False) -> list[str]:
    """Flags that ask for something this tool does not do: refused rather than silently ignored.

    ``uploads_to_hub``: the tool uploads to the Hugging Face Hub after its run (enjoy does), so ``--push_to_hub``
    is checked (:func:`hub_upload_problems`) instead of refused.
    """
    if not evaluation_flag(cfg, "push_to_hub"):
        return []
    if uploads_to_hub:
        return hub_upload_problems(cfg)
    return [
        "--push_to_hub: uploading to the Hugging Face Hub is not available in this tool. Record and upload with the "
        "enjoy script (add --save_video --push_to_hub --hf_repository=USER/REPO) or run python -m "
        "sample_factory.huggingface.push_to_hub -r USER/REPO -d TRAIN_DIR/EXPERIMENT"
    ]


# ---- Hugging Face Hub --------------------------------------------------------------------------------------------

HUB_INSTALL_HINT = 'pip install "sample-factory[huggingface]"'
# USER/REPO as the Hub spells it; the repository name also becomes the experiment folder of a download
_HF_REPOSITORY_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*")
_HF_NAME_MAX_LEN = 96


def hf_repository_problem(repo_id: str | None, flag: str = "--hf_repository") -> str | None:
    """Why ``repo_id`` is not a Hub model repository id ``USER/REPO`` (None when it is one)."""
    if not repo_id:
        return f"{flag} is empty: pass the Hub repository as USER/REPO, e.g. {flag} me/cartpole-appo"
    name = repo_id.split("/")[-1]
    if not _HF_REPOSITORY_RE.fullmatch(repo_id) or len(name) > _HF_NAME_MAX_LEN or ".." in repo_id:
        return (
            f"{flag}={repo_id} is not a Hub repository id: use USER/REPO (letters, digits, '-', '_' and '.', "
            f"each part starting with a letter or digit, the name at most {_HF_NAME_MAX_LEN} characters)"
        )
    return None


def hub_upload_problems(cfg: Config) -> list[str]:
    """What stops ``--push_to_hub`` before any episode runs: the repository id and the optional package."""
    repo_id = evaluation_flag(cfg, "hf_repository")
    if not repo_id:
        problems = [
            "--push_to_hub needs --hf_repository=USER/REPO, the Hub repository to upload to (created if missing)"
        ]
    else:
        problem = hf_repository_problem(repo_id)
        problems = [problem] if problem else []
    if _hub_library_missing():
        problems.append(
            f"--push_to_hub needs the huggingface_hub package, which is not installed: run {HUB_INSTALL_HINT}"
        )
    return problems


def _hub_library_missing() -> bool:
    """Imported, not just looked up, so a broken install is caught here too (only when uploading is asked for)."""
    try:
        importlib.import_module("huggingface_hub")
    except ImportError:
        return True
    return False


def warn_about_hub_flags(cfg: Config) -> None:
    """Hub flags that will not do what the user expects: say so before the run, not after the upload."""
    explicit = cfg.cli_args
    push_to_hub = evaluation_flag(cfg, "push_to_hub")
    if "hf_repository" in explicit and not push_to_hub:
        log.warning("--hf_repository only takes effect with --push_to_hub: it is ignored")
    if push_to_hub and not evaluation_flag(cfg, "save_video"):
        log.warning("--push_to_hub without --save_video: the model card will have no replay video; add --save_video")


def _warn_about_flags_without_effect(cfg: Config) -> None:
    """Flags typed where they cannot act do nothing: say so instead of letting the user believe otherwise."""
    explicit = cfg.cli_args
    idle = [] if cfg.with_pbt else [f"--{name}" for name in PBT_TUNING_FLAGS if name in explicit]
    if idle:
        log.warning("%s only take effect with --with_pbt=True, which is off: they are ignored", ", ".join(idle))
    if cfg.serial_mode and cfg.actor_worker_gpus:
        log.warning(
            "--actor_worker_gpus has no effect in serial mode (one process, whose GPUs are those CUDA_VISIBLE_DEVICES "
            "allows): it applies to rollout worker processes with --serial_mode=False"
        )
    warn_about_hub_flags(cfg)


def _range_problems(cfg: Config) -> list[str]:
    problems = [
        f"--{name}={flag_value(cfg, name)} must be >= 1" for name in _POSITIVE_FLAGS if flag_value(cfg, name) < 1
    ]
    if cfg.recurrence != -1 and cfg.recurrence < 1:
        problems.append(
            f"--recurrence={cfg.recurrence} must be >= 1, or -1 for a whole rollout with an RNN (1 without)"
        )
    return problems + value_range_problems(cfg) + _fault_tolerance_problems(cfg) + _pbt_range_problems(cfg)


def _fault_tolerance_problems(cfg: Config) -> list[str]:
    """Counts and seconds of docs/reliability.md: 0 turns a check off, a negative value means nothing."""
    names = ("heartbeat_timeout", "max_restarts", "max_restarts_total")
    return [
        f"--{name}={flag_value(cfg, name)} must be >= 0 (0 turns it off)" for name in names if flag_value(cfg, name) < 0
    ]


def _pbt_range_problems(cfg: Config) -> list[str]:
    """PBT's probabilities, fractions and mutation factors (checked only when PBT runs)."""
    if not cfg.with_pbt:
        return []
    problems = []
    if not 0.0 <= cfg.pbt_mutation_rate <= 1.0:
        problems.append(f"--pbt_mutation_rate={cfg.pbt_mutation_rate} is a probability: use a value in [0, 1]")
    if not 0.0 <= cfg.pbt_replace_fraction <= 0.5:
        problems.append(
            f"--pbt_replace_fraction={cfg.pbt_replace_fraction} must be in [0, 0.5]: the worst and the best fractions "
            "of the population may not overlap"
        )
    if not 1.0 <= cfg.pbt_perturb_min <= cfg.pbt_perturb_max:
        problems.append(
            f"--pbt_perturb_min={cfg.pbt_perturb_min} and --pbt_perturb_max={cfg.pbt_perturb_max} are multiplicative "
            "factors: need 1 <= pbt_perturb_min <= pbt_perturb_max (e.g. 1.1 and 1.5)"
        )
    if cfg.pbt_period_env_steps < 1:
        problems.append(f"--pbt_period_env_steps={cfg.pbt_period_env_steps} must be >= 1")
    return problems


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _divisibility_problems(cfg: Config) -> list[str]:
    problems = []
    envs, splits = cfg.num_envs_per_worker, cfg.worker_num_splits
    if envs % splits:
        problems.append(
            f"--num_envs_per_worker={envs} must be a multiple of --worker_num_splits={splits}: "
            f"use --num_envs_per_worker={_round_up(envs, splits)} or change --worker_num_splits"
        )
    recurrence = effective_recurrence(cfg)
    for name in ("batch_size", "rollout"):
        value = flag_value(cfg, name)
        if value % recurrence:
            problems.append(
                f"--{name}={value} must be a multiple of --recurrence={recurrence}: "
                f"use --{name}={_round_up(value, recurrence)} or change --recurrence"
            )
    samples = cfg.batch_size * cfg.num_batches_per_epoch
    if cfg.rollout > 0 and samples % cfg.rollout:
        problems.append(
            f"--batch_size={cfg.batch_size} x --num_batches_per_epoch={cfg.num_batches_per_epoch} = {samples} samples "
            f"must be a multiple of --rollout={cfg.rollout} (batches are made of whole trajectories): "
            f"use --batch_size={_round_up(cfg.batch_size, cfg.rollout)} or change --rollout"
        )
    if cfg.with_vtrace and recurrence != cfg.rollout:
        problems.append(
            f"--with_vtrace=True needs --recurrence equal to --rollout={cfg.rollout} (got --recurrence={recurrence}): "
            f"use --recurrence={cfg.rollout} or --with_vtrace=False"
        )
    return problems


def _sampling_problems(cfg: Config) -> list[str]:
    """Only the batched sampler hands an env its actions as one tensor; the non-batched one passes per-agent values."""
    if cfg.env_gpu_actions and not cfg.batched_sampling:
        return [
            "--env_gpu_actions=True needs --batched_sampling=True (the non-batched sampler passes each env plain "
            "per-agent actions, never a GPU tensor): add --batched_sampling=True or drop --env_gpu_actions"
        ]
    return []


# prefix of the metrics the evaluator reports (eval/avg_reward, eval/avg_episode_len, eval/avg_<extra stat>)
EVAL_METRIC_PREFIX = "eval/"


def _evaluation_metric_problems(cfg: Config) -> list[str]:
    """A best checkpoint or a PBT ranking by an evaluation metric needs the evaluator to report it."""
    if cfg.eval_every_env_steps > 0:
        return []
    return [
        f"--{name}={flag_value(cfg, name)} is reported by the evaluator, which is off: pass --eval_every_env_steps "
        f"(e.g. 100000) or choose a training metric (reward)"
        for name in ("save_best_metric", "pbt_target_objective")
        if str(flag_value(cfg, name)).startswith(EVAL_METRIC_PREFIX)
    ]


def _experiment_dir_problems(cfg: Config) -> list[str]:
    """The experiment folder must be a real sub-folder of a writable ``--train_dir``.

    An empty or ``..`` experiment name would point restart/overwrite at the train_dir itself or outside it.
    """
    if "\x00" in cfg.train_dir or "\x00" in cfg.experiment:
        return ["--train_dir and --experiment must not contain a NUL character (no file system accepts it)"]
    train_dir = os.path.abspath(cfg.train_dir)
    folder = os.path.abspath(os.path.join(train_dir, cfg.experiment))
    if folder == train_dir or os.path.commonpath([train_dir, folder]) != train_dir:
        return [f"--experiment={cfg.experiment!r} must name a sub-folder of --train_dir={cfg.train_dir}"]
    try:
        os.makedirs(train_dir, exist_ok=True)
        with tempfile.TemporaryFile(dir=train_dir):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return [f"--train_dir={cfg.train_dir} is not writable ({reason}): pass --train_dir=<a folder you can write to>"]
    return []


def _fall_back_to_cpu_if_no_cuda(cfg: Config) -> None:
    if cfg.device != "gpu":
        return
    import torch  # imported here: parsing and --help should not pay for loading torch

    if torch.cuda.is_available():
        return
    log.warning(
        "--device=gpu but CUDA is not available (torch.cuda.is_available() is False): falling back to "
        "--device=cpu. Pass --device=cpu to silence this warning."
    )
    cfg.device = "cpu"


def verify_cfg(cfg: Config, env_info: Any) -> bool:
    """Log an error for each setting that does not fit the env; return False if there is any.

    ``env_info`` is the env's description (``obs_space``, ``action_space``), known only once an env exists,
    which is why these checks are separate from :func:`validate_cfg`.
    """
    problems = env_problems(cfg, env_info)
    for problem in problems:
        log.error(problem)
    return not problems


def env_problems(cfg: Config, env_info: Any) -> list[str]:
    """Every setting that does not fit the env described by ``env_info``, each naming the flag and the fix."""
    return (
        _vtrace_problems(cfg)
        + _supported_action_space_problems(env_info)
        + _action_space_problems(cfg, env_info)
        + _action_head_problems(cfg, env_info)
        + _obs_key_problems(cfg, env_info)
        + _obs_space_problems(env_info)
        + _gpu_actions_problems(cfg, env_info)
    )


def require_cfg_fits_env(cfg: Config, env_info: Any) -> None:
    """Raise :class:`ConfigError` listing what :func:`verify_cfg` finds; the runners call it before any process starts.

    Without it such a setting fails only at the first training step, deep inside a worker (e.g. symmetric_kl
    with continuous actions is an AttributeError of the action distribution).
    """
    problems = env_problems(cfg, env_info)
    if problems:
        raise _config_error(problems)


def _config_error(problems: list[str]) -> ConfigError:
    return ConfigError(problems[0] if len(problems) == 1 else "invalid configuration:\n  " + "\n  ".join(problems))


def _vtrace_problems(cfg: Config) -> list[str]:
    recurrence = effective_recurrence(cfg)
    if cfg.with_vtrace and recurrence != cfg.rollout:
        return [f"--with_vtrace=True needs --recurrence={recurrence} equal to --rollout={cfg.rollout}"]
    return []


def _contains_box(space: spaces.Space) -> bool:
    if isinstance(space, spaces.Box):
        return True
    if isinstance(space, spaces.Tuple):
        return any(_contains_box(sub) for sub in space.spaces)
    if isinstance(space, spaces.Dict):
        return any(_contains_box(sub) for sub in space.spaces.values())
    return False


_ACTION_SPACES = (spaces.Discrete, spaces.Box, spaces.MultiDiscrete)


def _action_space_supported(space: spaces.Space) -> bool:
    if isinstance(space, spaces.Tuple):
        return all(_action_space_supported(sub) for sub in space.spaces)
    return isinstance(space, _ACTION_SPACES)


def _supported_action_space_problems(env_info: Any) -> list[str]:
    """The policy can only output the actions of these spaces; any other fails while allocating buffers."""
    space = env_info.action_space
    if _action_space_supported(space):
        return []
    return [
        f"the env's action space {space} is not supported: the policy outputs Discrete, Box, MultiDiscrete or a Tuple "
        "of them. Convert the actions in an env wrapper (e.g. a MultiBinary(n) as MultiDiscrete([2] * n), a Dict as "
        "a Tuple)"
    ]


def _action_space_problems(cfg: Config, env_info: Any) -> list[str]:
    if cfg.exploration_loss == "symmetric_kl" and _contains_box(env_info.action_space):
        return [
            "--exploration_loss=symmetric_kl works only with discrete actions but the env has continuous (Box) "
            "actions: use --exploration_loss=entropy"
        ]
    return []


def _action_head_problems(cfg: Config, env_info: Any) -> list[str]:
    """The autoregressive head needs sub-actions to chain, and builds the distribution of each one itself."""
    if cfg.action_head != "autoregressive":
        return []
    try:
        autoregressive_sub_spaces(env_info.action_space)
    except ValueError as exc:
        return [str(exc)]
    if cfg.action_distribution != "default":
        return [
            f"--action_head=autoregressive builds its own distribution over the sub-actions, so "
            f"--action_distribution={cfg.action_distribution} cannot apply: register the distribution for the "
            f"sub-actions' space type instead, or use --action_head=factorized"
        ]
    return []


def _obs_key_problems(cfg: Config, env_info: Any) -> list[str]:
    keys = cfg.normalize_input_keys
    obs_space = env_info.obs_space
    if not cfg.normalize_input or not keys:
        return []
    available = list(obs_space.spaces) if isinstance(obs_space, spaces.Dict) else ["obs"]
    missing = [key for key in keys if key not in available]
    if missing:
        return [f"--normalize_input_keys names {missing} that the observations lack; available keys: {available}"]
    return []


_STACKABLE_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


def _obs_space_problems(env_info: Any) -> list[str]:
    """Every observation (or Dict entry) must have a fixed shape: trajectory buffers stack them per actor and step."""
    obs_space = env_info.obs_space
    entries = obs_space.spaces.items() if isinstance(obs_space, spaces.Dict) else [("obs", obs_space)]
    return [
        f"observation {key!r} has space {space}, which cannot be stacked into the trajectory buffers (only Box, "
        "Discrete, MultiDiscrete and MultiBinary, alone or as entries of a Dict, can): flatten it in an env wrapper "
        "(e.g. gymnasium.wrappers.FlattenObservation) or split it into Dict entries"
        for key, space in entries
        if not isinstance(space, _STACKABLE_SPACES)
    ]


def _gpu_actions_problems(cfg: Config, env_info: Any) -> list[str]:
    """GPU actions go only to a natively vectorised env alone in its split; others are stepped with numpy actions.

    The rule matches ``sample_factory.envs.make_env``: such an env is multi-agent (it steps many agents in one
    call) and takes the stored action rows as they are.
    """
    if not (cfg.batched_sampling and cfg.env_gpu_actions):
        return []
    num_agents = int(getattr(env_info, "num_agents", 1))
    vectorised = bool(getattr(env_info, "is_multiagent", num_agents > 1)) or num_agents > 1
    if not vectorised or not rows_are_env_actions(env_info.action_space):
        return [
            f"--env_gpu_actions=True but the env (num_agents={num_agents}, actions {env_info.action_space}) is not "
            "natively vectorised, so the batched sampler steps it one env at a time with numpy actions: drop "
            "--env_gpu_actions"
        ]
    if cfg.num_envs_per_worker != cfg.worker_num_splits:
        return [
            f"--env_gpu_actions=True needs one vectorised env per split, but --num_envs_per_worker="
            f"{cfg.num_envs_per_worker} and --worker_num_splits={cfg.worker_num_splits} put several in each split, "
            f"which are stepped one after another with numpy actions: use --num_envs_per_worker="
            f"{cfg.worker_num_splits} or drop --env_gpu_actions"
        ]
    return []
