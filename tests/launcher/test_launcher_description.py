"""Run descriptions expand to the expected command lines and names; bad descriptions fail with clear errors."""

from __future__ import annotations

import argparse
import importlib
import inspect
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from launcher_helpers import CARTPOLE, SWEEP_NAMES, run_launcher, sweep_module

from sample_factory.launcher.launcher_utils import LauncherError, format_duration, seeds
from sample_factory.launcher.run import BACKENDS, launcher_argparser, load_run_description
from sample_factory.launcher.run_description import Experiment, ParamGrid, ParamList, RunDescription


def test_param_grid_is_the_cartesian_product_first_parameter_slowest() -> None:
    grid = ParamGrid([("a", [1, 2]), ("b", ["x", "y", "z"])])
    expected = [{"a": a, "b": b} for a in (1, 2) for b in ("x", "y", "z")]
    assert list(grid.generate_params()) == expected
    shuffled = list(grid.generate_params(randomize=True))
    assert sorted(map(str, shuffled)) == sorted(map(str, expected))


def test_sweep_expands_to_one_command_per_combination(tmp_path: Path) -> None:
    description = load_run_description(str(sweep_module(tmp_path, steps=2000)))
    commands = description.generate_experiments("/data/train_dir")
    assert [c.name for c in commands] == SWEEP_NAMES
    seeds_lrs = [(0, 0.0001), (0, 0.0003), (1111, 0.0001), (1111, 0.0003)]
    for command, (seed, lr) in zip(commands, seeds_lrs, strict=True):
        assert command.cmd == (
            f"{CARTPOLE} --train_for_env_steps=2000 --seed={seed} --learning_rate={lr} "
            f"--experiment={command.name} --train_dir=/data/train_dir/sweep"
        )
        assert command.root_dir == f"sweep/{command.name}"  # the experiment's folder, relative to --train_dir
        assert command.env_vars is None
    cmd, name, root_dir, env_vars = commands[0]  # unpacks like Sample Factory 2's tuples
    assert name == SWEEP_NAMES[0] and root_dir == f"sweep/{SWEEP_NAMES[0]}"


def test_names_show_only_the_varied_parameters_but_commands_get_all() -> None:
    grid = ParamGrid([("env", ["doom_basic"]), ("learning_rate", [1e-4, 1e-3])])
    commands = RunDescription("r", [Experiment("e", "train", grid)]).generate_experiments("td")
    assert [c.name for c in commands] == ["00_e_learning_rate_0.0001", "01_e_learning_rate_0.001"]
    assert "--env=doom_basic" in commands[0].cmd


def test_param_list_names_suffix_prefix_and_env_vars() -> None:
    params = ParamList([{"seed": 1, "env": "a b"}, {"seed": 2, "env": "a b"}])
    description = RunDescription(
        "r", [Experiment("exp", "python -m train", params, env_vars={"OMP_NUM_THREADS": 1})], param_prefix=""
    )
    description.experiment_suffix = "_v2"
    commands = description.generate_experiments("td")
    assert [c.name for c in commands] == ["00_exp_seed_1_v2", "01_exp_seed_2_v2"]
    assert shlex.split(commands[0].cmd) == [
        "python", "-m", "train", "seed=1", "env=a b", "--experiment=00_exp_seed_1_v2", "--train_dir=td/r",
    ]  # fmt: skip
    assert commands[1].env_vars == {"OMP_NUM_THREADS": "1"}


def test_experiment_without_params_and_custom_arg_names() -> None:
    description = RunDescription(
        "pbt",
        [Experiment("duel", "train --with_pbt=True")],
        experiment_arg_name="--exp",
        experiment_dir_arg_name="--root",
        customize_experiment_name=False,
    )
    (command,) = description.generate_experiments("td")
    assert command.name == "duel"
    assert command.cmd == "train --with_pbt=True --exp=duel --root=td/pbt"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ParamGrid([("seed", [])]), "has no values"),
        (lambda: ParamGrid([("seed", [1]), ("seed", [2])]), "appears twice"),
        (lambda: Experiment("bad name", "train"), "must be non-empty"),
        (lambda: RunDescription("r", []), "has no experiments"),
        (
            lambda: RunDescription("r", [Experiment("e", "train --experiment=x")]).generate_experiments("td"),
            "remove --experiment from its command",
        ),
        (
            lambda: RunDescription(
                "r", [Experiment("e", "a"), Experiment("e", "b")], customize_experiment_name=False
            ).generate_experiments("td"),
            "both named 'e'",
        ),
        (lambda: seeds(0), "at least one seed"),
    ],
)
def test_bad_descriptions_name_the_cause(build, message: str) -> None:
    with pytest.raises(LauncherError, match=message):
        build()


def test_seeds_are_distinct_and_deterministic() -> None:
    assert seeds(4) == seeds(4) == [0, 1111, 2222, 3333]


def test_format_duration() -> None:
    assert format_duration(3725.9) == "1:02:05"


def test_argparser_adds_the_flags_of_the_chosen_backend() -> None:
    parser = launcher_argparser(["--run=x", "--backend=slurm"])
    args = parser.parse_args(["--run=x", "--backend=slurm", "--slurm_gpus_per_job=0"])
    assert args.slurm_gpus_per_job == 0 and args.slurm_timeout == "0" and args.pause_between == 1.0
    processes = launcher_argparser(["--run=x"]).parse_args(["--run=x"])
    assert (processes.backend, processes.max_parallel, processes.num_gpus) == ("processes", 4, 1)
    assert not hasattr(processes, "slurm_timeout")


def test_backend_choices_are_the_backends_and_each_has_its_own_section() -> None:
    """The flag table lists --backend's choices; they must stay the keys of BACKENDS."""
    parser = launcher_argparser([])
    assert parser._option_string_actions["--backend"].choices == sorted(BACKENDS)
    for name, module in BACKENDS.items():
        probe = argparse.ArgumentParser(add_help=False)
        module.add_arguments(probe)
        assert probe._action_groups[-1].title == f"{name} backend"
        assert probe._action_groups[-1]._group_actions, f"the {name} backend declares its flags"


def test_flag_of_another_backend_is_an_error_naming_its_backend(tmp_path: Path) -> None:
    module = sweep_module(tmp_path)
    code, output = run_launcher([f"--run={module}", "--backend=processes", "--slurm_timeout=1h"])
    assert code == 2
    assert "--slurm_timeout=1h does not apply to --backend=processes: it is a flag of --backend=slurm" in output


def test_module_without_run_description(tmp_path: Path) -> None:
    (tmp_path / "empty_run.py").write_text("X = 1\n")
    code, output = run_launcher([f"--run={tmp_path / 'empty_run.py'}"])
    assert code == 2 and "defines no RUN_DESCRIPTION" in output
    code, output = run_launcher(["--run=no_such_package.sweep"])
    assert code == 2 and "no module 'no_such_package' on the Python path" in output


def _family_parsers():
    from sf_examples.train_gym_env import parse_gym_args

    parsers = {"sf_examples.train_gym_env": parse_gym_args}
    try:
        from sf_examples.vizdoom.train_vizdoom import parse_vizdoom_cfg

        parsers["sf_examples.vizdoom.train_vizdoom"] = parse_vizdoom_cfg
    except ImportError as e:  # the vizdoom extra is not installed: its descriptions are only expanded
        print(f"vizdoom descriptions not parsed: {e}")
    return parsers


def test_examples_expand_to_commands_their_train_scripts_accept(tmp_path: Path) -> None:
    """Every shipped run description loads, expands, and each command's flags parse with its family's parser."""
    parsers = _family_parsers()
    paths = sorted(Path(__file__).resolve().parents[2].glob("sf_examples/*/experiments/*.py"))
    modules = [p for p in paths if p.name != "__init__.py"]
    assert {p.stem for p in modules} >= {
        "cartpole_seeds",
        "doom_basic_lr",
        "doom_duel_selfplay",
        "doom_deathmatch_bots_pbt",
    }
    for path in modules:
        commands = load_run_description(str(path)).generate_experiments(str(tmp_path))
        assert commands, path
        for command in commands:
            argv = command.argv()
            assert argv[:2] == ["python", "-m"], command.cmd
            parse = parsers.get(argv[2])
            if parse is not None:
                cfg = parse(argv[3:])
                assert cfg.experiment == command.name
                assert os.path.join(cfg.train_dir, cfg.experiment) == os.path.join(str(tmp_path), command.root_dir)


def test_launcher_does_not_import_torch() -> None:
    """It runs on login nodes without the training stack: importing it must stay light."""
    code = "import sys, sample_factory.launcher.run; print('torch' in sys.modules, 'gymnasium' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False False"


@pytest.mark.parametrize(
    ("module", "name", "params"),
    [
        ("sample_factory.launcher.launcher_utils", "seeds", ["num_seeds"]),
        ("sample_factory.launcher.run", "launcher_argparser", ["args"]),
        ("sample_factory.launcher.run_description", "Experiment", ["name", "cmd", "param_generator", "env_vars"]),
        ("sample_factory.launcher.run_description", "ParamGrid", ["grid_tuples"]),
        ("sample_factory.launcher.run_description", "ParamList", ["combinations"]),
        (
            "sample_factory.launcher.run_description",
            "RunDescription",
            [
                "run_name",
                "experiments",
                "experiment_arg_name",
                "experiment_dir_arg_name",
                "customize_experiment_name",
                "param_prefix",
            ],
        ),  # fmt: skip
        ("sample_factory.launcher.run_processes", "run", ["run_description", "args"]),
    ],
)
def test_sample_factory_2_surface(module: str, name: str, params: list[str]) -> None:
    """The launcher names of the project's API_SURFACE.md, with the parameters Sample Factory 2 callers pass."""
    obj = getattr(importlib.import_module(module), name)
    assert list(inspect.signature(obj).parameters) == params


def test_the_mujoco_sweep_covers_every_env_of_the_family():
    from sf_examples.mujoco.experiments.mujoco_all_envs import ENVS
    from sf_examples.mujoco.mujoco_utils import MUJOCO_ENVS

    assert sorted(ENVS) == sorted(MUJOCO_ENVS)


def test_experiment_alone_expands_to_commands_and_names_numbered_from_zero() -> None:
    """``Experiment.generate_experiments``: (command, name) pairs without the run's train dir argument."""
    grid = ParamGrid([("lr", [0.1, 0.2]), ("env", ["a"])])
    pairs = Experiment("exp", "python train.py", grid).generate_experiments("--name", param_prefix="-")
    assert pairs == [
        ("python train.py -lr=0.1 -env=a --name=00_exp_lr_0.1", "00_exp_lr_0.1"),
        ("python train.py -lr=0.2 -env=a --name=01_exp_lr_0.2", "01_exp_lr_0.2"),
    ]
    assert Experiment("solo", "train").generate_experiments(customize_experiment_name=False) == [
        ("train --experiment=solo", "solo")
    ]


def test_second_experiment_of_a_run_continues_the_numbering() -> None:
    grid = ParamGrid([("seed", [1, 2])])
    description = RunDescription("r", [Experiment("a", "train", grid), Experiment("b", "train", grid)])
    commands = description.generate_experiments("td")
    assert [c.name for c in commands] == ["00_a_seed_1", "01_a_seed_2", "02_b_seed_1", "03_b_seed_2"]
    assert [c.root_dir for c in commands] == [f"r/{c.name}" for c in commands]


def test_parser_alone_needs_no_run_but_launching_does() -> None:
    """Code that builds the parser to fill in flags may leave --run out; the command line may not."""
    args = launcher_argparser([]).parse_args([])
    assert args.run is None and args.backend == "processes"
    result = subprocess.run(
        [sys.executable, "-m", "sample_factory.launcher.run"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2 and "--run is required" in result.stderr
