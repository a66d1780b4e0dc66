"""make_nethack_env on the real NLE: keys, seeding, episode statistics, rendering; and the no-nle failure modes."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from nethack_fakes import requires_nle

from sample_factory.envs.env_utils import MissingDependencyError, UnknownEnvError
from sample_factory.utils.attr_dict import AttrDict
from sf_examples.nethack.nethack_env import (
    FALLBACK_CFG,
    NETHACK_ENVS,
    NetHackSpec,
    make_nethack_env,
    nethack_available,
    nethack_env_by_name,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_env_names_and_specs() -> None:
    assert NETHACK_ENVS == (
        "nethack_staircase", "nethack_score", "nethack_pet", "nethack_oracle", "nethack_gold", "nethack_eat",
        "nethack_scout", "nethack_challenge",
    )  # fmt: skip
    assert nethack_env_by_name("nethack_pet") == NetHackSpec("nethack_pet", "NetHackStaircasePet-v0")
    with pytest.raises(UnknownEnvError, match="nethack_challenge"):
        nethack_env_by_name("nethack_challange")


def test_nethack_available_says_whether_nle_is_installed() -> None:
    try:
        import nle  # noqa: F401

        installed = True
    except ImportError:
        installed = False
    assert nethack_available() is installed


def run_without_nle(tmp_path: Path, code: str) -> subprocess.CompletedProcess:
    """Run ``code`` where ``import nle`` fails (a stand-in package that raises), as on a machine without it."""
    fake = tmp_path / "nle"
    fake.mkdir()
    (fake / "__init__.py").write_text('raise ImportError("No module named nle (simulated)")\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO_ROOT)])}
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, capture_output=True, text=True,
                          cwd=REPO_ROOT, timeout=120)  # fmt: skip


def test_modules_import_and_env_creation_names_the_install_command(tmp_path: Path) -> None:
    result = run_without_nle(
        tmp_path,
        """
        import sf_examples.nethack.enjoy_nethack, sf_examples.nethack.fast_eval_nethack
        import sf_examples.nethack.scripts.sample_env, sf_examples.nethack.models.chaotic_dwarf
        from sf_examples.nethack.nethack_env import make_nethack_env
        try:
            make_nethack_env("nethack_score")
        except ImportError as exc:
            print(type(exc).__name__, exc)
        """,
    )
    assert result.returncode == 0, result.stderr
    assert "MissingDependencyError" in result.stdout and 'pip install "sample-factory[nethack]"' in result.stdout


def test_train_without_nle_fails_at_once_with_the_install_command(tmp_path: Path) -> None:
    result = run_without_nle(
        tmp_path,
        """
        import sys
        from sf_examples.nethack.train_nethack import main
        sys.argv = ["train_nethack", "--env=nethack_challenge", "--experiment=x", "--train_dir=%s"]
        sys.exit(main())
        """
        % (tmp_path / "train_dir"),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert 'pip install "sample-factory[nethack]"' in result.stdout + result.stderr
    assert not (tmp_path / "train_dir").exists()  # nothing started


def test_missing_dependency_error_is_an_import_error() -> None:
    assert issubclass(MissingDependencyError, ImportError)


@requires_nle
def test_env_gives_the_family_keys() -> None:
    env = make_nethack_env("nethack_score")
    try:
        obs, _ = env.reset(seed=3)
        assert set(obs) == {
            "tty_chars", "tty_colors", "tty_cursor", "blstats", "message", "glyphs", "screen_image", "prev_actions",
        }  # fmt: skip
        crop = FALLBACK_CFG["crop_dim"] * FALLBACK_CFG["pixel_size"]
        assert obs["screen_image"].shape == (3, crop, crop)
        assert env.action_space.n == 23
        for key, value in obs.items():
            assert env.observation_space[key].contains(value), key
    finally:
        env.close()


@requires_nle
def test_flags_shape_the_env() -> None:
    cfg = AttrDict({**FALLBACK_CFG, "add_image_observation": False, "use_prev_action": False, "max_episode_steps": 5})
    env = make_nethack_env("nethack_challenge", cfg)
    try:
        obs, _ = env.reset()
        assert "screen_image" not in obs and "prev_actions" not in obs
        assert env.action_space.n > 23  # the challenge plays with the full keyboard
        ended = [any(env.step(19)[2:4]) for _ in range(5)]  # 19: wait
        assert ended == [False] * 4 + [True]
    finally:
        env.close()


@requires_nle
def test_seeded_resets_repeat_the_same_game() -> None:
    first, second = make_nethack_env("nethack_score"), make_nethack_env("nethack_score")
    try:
        a, _ = first.reset(seed=11)
        b, _ = second.reset(seed=11)
        assert np.array_equal(a["tty_chars"], b["tty_chars"]) and np.array_equal(a["blstats"], b["blstats"])
    finally:
        first.close()
        second.close()


@requires_nle
def test_episode_end_reports_statistics_and_task_scores() -> None:
    cfg = AttrDict({**FALLBACK_CFG, "max_episode_steps": 30, "add_image_observation": False})
    env = make_nethack_env("nethack_scout", cfg)
    try:
        env.reset(seed=2)
        rng = np.random.default_rng(0)
        for _ in range(30):
            _, _, terminated, truncated, info = env.step(int(rng.integers(1, 9)))  # moves
            if terminated or truncated:
                break
        stats = info["episode_extra_stats"]
        assert stats["turns"] >= 1 and stats["dlvl"] >= 1 and stats["max_hitpoints"] > 0
        assert {"scout_score", "gold_score", "staircase_score", "sokobansolved_score"} <= set(stats)
    finally:
        env.close()


@requires_nle
def test_rgb_array_rendering_draws_the_terminal() -> None:
    env = make_nethack_env("nethack_challenge", render_mode="rgb_array")
    try:
        env.reset()
        frame = env.render()
        assert frame.shape == (24 * 9, 80 * 9, 3) and frame.dtype == np.uint8 and frame.any()
    finally:
        env.close()
