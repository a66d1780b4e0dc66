"""ngc backend: one ``ngc batch run`` command per experiment, generated from a template.

The template is a shell command line with ``string.Template`` placeholders (``$job_name``, ``$name``,
``$run_name``, ``$command``; ``$$`` for a literal dollar); ``#`` comment lines are dropped and the remaining lines
joined. ``$command`` is escaped for use inside double quotes (``--commandline "$command"``), so the command NGC
runs is exactly the experiment's command line. Without ``--ngc_print_only`` each generated line runs through
``bash -c`` (the ``ngc`` CLI must be installed and logged in).
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import string
import subprocess
import time

from sample_factory.launcher.launcher_utils import LauncherError, launcher_flags, read_template
from sample_factory.launcher.run_description import ExperimentCommand, RunDescription

DEFAULT_NGC_JOB_TEMPLATE = """\
# ngc batch run template: adapt the instance, image and workspace to your organisation (--ngc_job_template).
# Placeholders: $job_name (run-experiment), $name (experiment), $run_name, $command (escaped for "...").
ngc batch run --name "$job_name" --instance dgx1v.16g.1.norm --image "nvidia/pytorch:23.10-py3"
    --result /results --workspace sample_factory:/workspace
    --commandline "cd /workspace/sample-factory && $command"
"""

_DOUBLE_QUOTE_SPECIALS = re.compile(r'([\\"$`])')


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of this backend, as their own --help section."""
    launcher_flags().add_group(parser, "ngc")


def add_ngc_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Sample Factory 2's name for :func:`add_arguments`; returns ``parser`` for chaining."""
    add_arguments(parser)
    return parser


def escape_for_double_quotes(text: str) -> str:
    r"""Backslash the characters a shell still interprets inside double quotes (\ " $ `)."""
    return _DOUBLE_QUOTE_SPECIALS.sub(r"\\\1", text)


def _command_line(command: ExperimentCommand) -> str:
    """The experiment's command with its env vars as ``KEY=value`` prefixes."""
    env = [f"{key}={shlex.quote(value)}" for key, value in (command.env_vars or {}).items()]
    return " ".join([*env, command.cmd])


def generate_commands(description: RunDescription, train_dir: str, template_text: str) -> list[str]:
    """One shell command line per experiment."""
    # comment lines dropped; the rest joined (a trailing backslash continuation is allowed but not needed)
    lines = [line.strip().removesuffix("\\").strip() for line in template_text.splitlines()]
    lines = [line for line in lines if line and not line.startswith("#")]
    template = string.Template(" ".join(lines))
    commands = []
    for command in description.generate_experiments(train_dir):
        values = {
            "job_name": f"{description.run_name}-{command.name}",
            "name": command.name,
            "run_name": description.run_name,
            "command": escape_for_double_quotes(_command_line(command)),
        }
        try:
            commands.append(template.substitute(values))
        except (KeyError, ValueError) as e:
            raise LauncherError(
                f"NGC job template: unknown or malformed placeholder {e} (use $job_name, $name, $run_name, "
                f"$command; write $$ for a literal $)"
            ) from e
    return commands


def run(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Print (``--ngc_print_only``) or run every generated command; 1 when any command failed."""
    template = read_template(args.ngc_job_template, DEFAULT_NGC_JOB_TEMPLATE, "--ngc_job_template")
    commands = generate_commands(run_description, args.train_dir, template)
    if args.ngc_print_only:
        print("\n".join(commands))
        return 0
    if shutil.which("ngc") is None:
        raise LauncherError("the ngc CLI is not on PATH: install and configure it, or pass --ngc_print_only=True")
    failed = 0
    for i, line in enumerate(commands):
        if i > 0 and args.pause_between > 0:
            time.sleep(args.pause_between)
        print(f"[launcher] {line}")
        result = subprocess.run(["bash", "-c", line])
        if result.returncode != 0:
            print(f"[launcher] the command above failed with exit code {result.returncode}")
            failed += 1
    return 1 if failed else 0


def run_ngc(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Sample Factory 2's name for :func:`run`: the exit code of the whole run."""
    return run(run_description, args)
