"""What a sweep runs: parameter generators, experiments and the run that groups them.

A run module defines ``RUN_DESCRIPTION = RunDescription(...)``; every backend asks it for the same list of
:class:`ExperimentCommand` (one command line and one experiment name each), so a sweep expands identically on
local processes, on Slurm and on NGC. Names are derived only from the description (never random), which is what
lets re-running the launcher resume the same experiment folders instead of starting new ones.
"""

from __future__ import annotations

import itertools
import os
import random
import re
import shlex
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple

from sample_factory.launcher.launcher_utils import LauncherError

ParamDict = dict[str, Any]

# experiment folder names stay well under the 255-byte limit of most file systems
MAX_NAME_LENGTH = 120
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._=+-]+")


class ParamGenerator:
    """Yields one dict of parameters per experiment; subclasses decide which combinations."""

    def generate_params(self, randomize: bool = False) -> Iterator[ParamDict]:
        raise NotImplementedError

    def varied_keys(self) -> list[str]:
        """Parameters whose value differs between the combinations: the ones worth putting in experiment names."""
        combinations = list(self.generate_params())
        keys = list(dict.fromkeys(key for combination in combinations for key in combination))
        return [key for key in keys if len({repr(c.get(key)) for c in combinations}) > 1]


class ParamGrid(ParamGenerator):
    """Every combination (cartesian product) of the given values, the first parameter varying slowest.

    ``ParamGrid([("seed", [0, 1111]), ("learning_rate", [1e-4, 3e-4])])`` yields four dicts.
    """

    def __init__(self, grid_tuples: Iterable[tuple[str, Iterable[Any]]]) -> None:
        self.grid: list[tuple[str, list[Any]]] = []
        for entry in grid_tuples:
            if not (isinstance(entry, tuple | list) and len(entry) == 2 and isinstance(entry[0], str)):
                raise LauncherError(f"ParamGrid entry {entry!r} must be a (name, [values...]) pair")
            name, values = entry[0], list(entry[1]) if not isinstance(entry[1], str) else [entry[1]]
            if not values:
                raise LauncherError(f"ParamGrid parameter {name!r} has no values: give it at least one")
            if name in dict(self.grid):
                raise LauncherError(f"ParamGrid parameter {name!r} appears twice: merge its values into one entry")
            self.grid.append((name, values))

    def generate_params(self, randomize: bool = False) -> Iterator[ParamDict]:
        names = [name for name, _ in self.grid]
        combinations = [
            dict(zip(names, values, strict=True)) for values in itertools.product(*(v for _, v in self.grid))
        ]
        if randomize:
            random.shuffle(combinations)
        yield from combinations

    def varied_keys(self) -> list[str]:
        return [name for name, values in self.grid if len(values) > 1]


class ParamList(ParamGenerator):
    """An explicit list of parameter dicts, one experiment each (for combinations a grid cannot express)."""

    def __init__(self, combinations: Iterable[ParamDict]) -> None:
        self.combinations = [dict(c) for c in combinations]
        for combination in self.combinations:
            bad = [key for key in combination if not isinstance(key, str)]
            if bad:
                raise LauncherError(
                    f"ParamList combination {combination!r}: parameter names must be strings, got {bad}"
                )

    def generate_params(self, randomize: bool = False) -> Iterator[ParamDict]:
        combinations = [dict(c) for c in self.combinations]
        if randomize:
            random.shuffle(combinations)
        yield from combinations


class ExperimentCommand(NamedTuple):
    """One expanded experiment; unpacks like Sample Factory 2's ``(cmd, name, root_dir, env_vars)`` tuples.

    ``root_dir`` is the experiment's folder relative to the launcher's ``--train_dir``: ``<run_name>/<name>``.
    """

    cmd: str
    name: str
    root_dir: str
    env_vars: dict[str, str] | None

    def argv(self) -> list[str]:
        return shlex.split(self.cmd)


class Experiment:
    """A base command plus the parameters to vary on it; ``name`` prefixes every experiment name it expands to."""

    def __init__(
        self,
        name: str,
        cmd: str,
        param_generator: ParamGenerator | Iterable[ParamDict] = (),
        env_vars: dict[str, str] | None = None,
    ) -> None:
        if not name or _UNSAFE_NAME_CHARS.search(name):
            raise LauncherError(f"Experiment name {name!r} must be non-empty and use only letters, digits and ._=+-")
        if not cmd.strip():
            raise LauncherError(f"Experiment {name!r} has an empty command")
        self.name = name
        self.cmd = cmd
        self.param_generator = param_generator
        self.env_vars = {str(k): str(v) for k, v in env_vars.items()} if env_vars else None

    def combinations(self) -> list[ParamDict]:
        """Each parameter dict to append to the command; one empty dict when nothing varies."""
        if isinstance(self.param_generator, ParamGenerator):
            found = list(self.param_generator.generate_params())
        else:
            found = [dict(p) for p in self.param_generator]
        return found or [{}]

    def varied_keys(self) -> list[str]:
        if isinstance(self.param_generator, ParamGenerator):
            return self.param_generator.varied_keys()
        return ParamList(self.combinations()).varied_keys()

    def named_combinations(
        self, customize_experiment_name: bool = True, first_index: int = 0, suffix: str = ""
    ) -> list[tuple[ParamDict, str]]:
        """Each parameter combination with its experiment name, numbered from ``first_index``.

        With ``customize_experiment_name`` the name is ``<index>_<experiment>_<key>_<value>...`` built from the
        parameters that vary; without it, the experiment's own name (plus the index when it expands to several).
        """
        combinations = self.combinations()
        varied = self.varied_keys()
        named = []
        for index, params in enumerate(combinations, start=first_index):
            if customize_experiment_name:
                parts = [f"{index:02d}", self.name] + [_name_part(k, params[k]) for k in varied if k in params]
                name = "_".join(parts)
            else:
                name = self.name if len(combinations) == 1 else f"{self.name}_{index:02d}"
            named.append((params, name[:MAX_NAME_LENGTH] + suffix))  # the index prefix keeps truncated names unique
        return named

    def generate_experiments(
        self,
        experiment_arg_name: str = "--experiment",
        customize_experiment_name: bool = True,
        param_prefix: str = "--",
    ) -> list[tuple[str, str]]:
        """``(command, name)`` per parameter combination, numbered from 00, as Sample Factory 2's Experiment gives.

        The command is ``cmd`` plus ``<param_prefix><key>=<value>`` for every parameter and
        ``<experiment_arg_name>=<name>``; :class:`RunDescription` adds the train dir argument on top.
        """
        return [
            (_command(self.cmd, params, param_prefix, [(experiment_arg_name, name)]), name)
            for params, name in self.named_combinations(customize_experiment_name)
        ]


def _format_value(value: Any) -> str:
    return str(value)


def _name_part(key: str, value: Any) -> str:
    return _UNSAFE_NAME_CHARS.sub("_", f"{key.lstrip('-')}_{_format_value(value)}")


def _command(cmd: str, params: ParamDict, param_prefix: str, launcher_args: list[tuple[str, str]]) -> str:
    """``cmd`` with the parameters and the launcher's own ``arg=value`` pairs appended, each shell-quoted."""
    args = [f"{param_prefix}{key}={_format_value(value)}" for key, value in params.items()]
    args += [f"{arg}={value}" for arg, value in launcher_args]
    return " ".join([cmd.strip()] + [shlex.quote(a) for a in args])


class RunDescription:
    """A named group of experiments; the launcher puts them all under ``<train_dir>/<run_name>/``.

    Each experiment's command gets ``<experiment_arg_name>=<name>`` and ``<experiment_dir_arg_name>=<run dir>``
    appended, and its parameters as ``<param_prefix><key>=<value>`` (``param_prefix=""`` for Hydra-style
    ``key=value`` overrides). With ``customize_experiment_name`` the name is ``<index>_<experiment>_<key>_<value>...``
    built from the parameters that vary; without it, the experiment's own name (plus the index when it expands to
    several commands).
    """

    def __init__(
        self,
        run_name: str,
        experiments: Iterable[Experiment],
        experiment_arg_name: str = "--experiment",
        experiment_dir_arg_name: str = "--train_dir",
        customize_experiment_name: bool = True,
        param_prefix: str = "--",
    ) -> None:
        if not run_name or _UNSAFE_NAME_CHARS.search(run_name):
            raise LauncherError(f"run_name {run_name!r} must be non-empty and use only letters, digits and ._=+-")
        self.run_name = run_name
        self.experiments = list(experiments)
        if not self.experiments:
            raise LauncherError(f"RunDescription {run_name!r} has no experiments")
        self.experiment_arg_name = experiment_arg_name
        self.experiment_dir_arg_name = experiment_dir_arg_name
        self.customize_experiment_name = customize_experiment_name
        self.param_prefix = param_prefix
        self.experiment_suffix = ""  # set by the launcher's --experiment_suffix

    def run_dir(self, train_dir: str) -> str:
        return os.path.join(train_dir, self.run_name)

    def generate_experiments(self, train_dir: str) -> list[ExperimentCommand]:
        """Every experiment's command line, in launch order; raises on clashing names or launcher-owned flags.

        Experiments are numbered through the whole run (the second Experiment continues where the first stopped),
        so names sort in launch order in the run folder that they share.
        """
        run_dir = self.run_dir(train_dir)
        commands = []
        for experiment in self.experiments:
            self._check_command(experiment)
            named = experiment.named_combinations(self.customize_experiment_name, len(commands), self.experiment_suffix)
            for params, name in named:
                launcher_args = [(self.experiment_arg_name, name), (self.experiment_dir_arg_name, run_dir)]
                cmd = _command(experiment.cmd, params, self.param_prefix, launcher_args)
                commands.append(ExperimentCommand(cmd, name, os.path.join(self.run_name, name), experiment.env_vars))
        self._check_unique(commands)
        return commands

    def _check_command(self, experiment: Experiment) -> None:
        for owned in (self.experiment_arg_name, self.experiment_dir_arg_name):
            tokens = shlex.split(experiment.cmd)
            if any(t == owned or t.startswith(f"{owned}=") for t in tokens):
                raise LauncherError(
                    f"Experiment {experiment.name!r}: remove {owned} from its command, the launcher sets it "
                    f"(the run folder comes from --train_dir of the launcher and the run name {self.run_name!r})"
                )

    @staticmethod
    def _check_unique(commands: list[ExperimentCommand]) -> None:
        seen: set[str] = set()
        for command in commands:
            if command.name in seen:
                raise LauncherError(
                    f"Two experiments are both named {command.name!r}: give the Experiments different names "
                    f"or keep customize_experiment_name=True"
                )
            seen.add(command.name)
