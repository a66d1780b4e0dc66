"""The library's env-family registry: families announce themselves; tools look them up by env name."""

from __future__ import annotations

import argparse
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from sample_factory.envs import env_families
from sample_factory.envs.env_families import (
    ENTRY_POINT_GROUP,
    EnvFamily,
    add_family_args,
    discover_env_families,
    family_of,
    register_env_family,
    register_family_env,
)
from sample_factory.envs.env_utils import UnknownEnvError, register_env

_HERE = __name__


def register_toy_env() -> None:
    register_env("toy_env_v1", lambda name, cfg, env_config, render_mode: "toy")


def add_toy_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--toy_level", type=int, default=1)


def toy_defaults(parser: argparse.ArgumentParser, evaluation: bool = False) -> None:
    parser.set_defaults(num_workers=3 if not evaluation else 1)


TOY = EnvFamily(
    name="toy",
    train_script="my_pkg.train_toy",
    register=f"{_HERE}:register_toy_env",
    add_args=f"{_HERE}:add_toy_args",
    override_defaults=f"{_HERE}:toy_defaults",
    env_prefix="toy_",
    defaults_take_evaluation=True,
)
FALLBACK = EnvFamily(
    name="anything", train_script="my_pkg.train_any", register=f"{_HERE}:register_toy_env", fallback=True
)


@pytest.fixture
def only(monkeypatch):
    """Run a test with exactly the given families registered."""

    def use(*families: EnvFamily) -> None:
        monkeypatch.setattr(env_families, "_FAMILIES", {})
        for family in families:
            register_env_family(family)

    return use


def test_named_family_wins_over_the_fallback(only):
    only(FALLBACK, TOY)
    assert family_of("toy_env_v1") is TOY
    assert family_of("CartPole-v1") is FALLBACK


def test_no_family_at_all(only):
    only()
    assert family_of("toy_env_v1") is None
    with pytest.raises(UnknownEnvError, match="toy_env_v1"):
        register_family_env("toy_env_v1")


def test_family_args_defaults_and_train_script(only):
    only(TOY)
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_workers", type=int, default=8)
    parser.add_argument("--train_script", default=None)
    add_family_args(parser, "toy_env_v1", evaluation=True)
    cfg = parser.parse_args(["--toy_level=4"])
    assert (cfg.toy_level, cfg.num_workers, cfg.train_script) == (4, 1, "my_pkg.train_toy")


def test_custom_registration_skips_the_fallback_family(only):
    only(FALLBACK)
    parser = argparse.ArgumentParser()
    add_family_args(parser, "whatever", custom_registration=True)
    assert parser.parse_args([]) == argparse.Namespace()


def test_register_family_env_registers_through_the_hook(only):
    only(TOY)
    register_family_env("toy_env_v1")
    from sample_factory.envs.create_env import create_env

    assert create_env("toy_env_v1") == "toy"


def test_installed_examples_announce_themselves_through_the_entry_point(only):
    only()
    names = [ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)]
    assert "sf_examples.families:register_example_families" in names
    assert "sf_examples" in discover_env_families()
    assert family_of("doom_basic").name == "vizdoom"
    assert family_of("CartPole-v1").name == "gym"


def test_a_broken_plugin_is_skipped(only, monkeypatch, caplog):
    class BrokenEntryPoint:
        name, value = "broken", "nowhere:nothing"

        def load(self):
            raise ImportError("no module named nowhere")

    monkeypatch.setattr(env_families, "entry_points", lambda group: [BrokenEntryPoint()])
    only()
    assert discover_env_families() == []


def test_library_never_imports_the_examples():
    """Importing every public entry point of the library pulls in no sf_examples module."""
    code = (
        "import sys\n"
        "import sample_factory.train, sample_factory.enjoy, sample_factory.eval, sample_factory.export_onnx\n"
        "import sample_factory.algo.runners.runner_parallel, sample_factory.algo.runners.runner_serial\n"
        "print(sorted(m for m in sys.modules if m.startswith('sf_examples')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_library_module_names_an_example_module_in_an_import():
    import pathlib
    import re

    root = pathlib.Path(env_families.__file__).parents[1]
    pattern = re.compile(r"^\s*(from|import)\s+sf_examples\b|import_module\(\s*[\"']sf_examples", re.MULTILINE)
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []
