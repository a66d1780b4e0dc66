"""SF2's GPU names: one policy's GPU (``cuda_envvars_for_policy``) and the ``get_available_gpus`` script."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from sample_factory.utils import get_available_gpus, gpu_utils
from sample_factory.utils.gpu_utils import CUDA_ENVVAR, cuda_envvars_for_policy

SMI_OUTPUT = "GPU 0: A (UUID: GPU-a)\nGPU 1: B (UUID: GPU-b)\nGPU 2: C (UUID: GPU-c)\n"


@pytest.fixture
def fake_smi_path(tmp_path: Path) -> str:
    """A PATH holding only a fake ``nvidia-smi -L`` that lists three GPUs."""
    script = tmp_path / "nvidia-smi"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.stdout.write({SMI_OUTPUT!r})\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(tmp_path)


@pytest.mark.parametrize(("policy_id", "expected"), [(0, "3"), (1, "5"), (2, "3")])
def test_cuda_envvars_for_policy_pins_one_gpu_round_robin(
    monkeypatch: pytest.MonkeyPatch, policy_id: int, expected: str
) -> None:
    monkeypatch.setenv(CUDA_ENVVAR, "3,5")
    assert cuda_envvars_for_policy(policy_id, process_type="learner") == [int(expected)]
    assert os.environ[CUDA_ENVVAR] == expected


def test_cuda_envvars_for_policy_without_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CUDA_ENVVAR, "")
    assert cuda_envvars_for_policy(0, "inference") == [] and os.environ[CUDA_ENVVAR] == ""
    with pytest.raises(ValueError, match="policy_id=-1"):
        cuda_envvars_for_policy(-1, "learner")


def test_get_available_gpus_main_prints_visible_gpus(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fake_smi_path: str
) -> None:
    monkeypatch.setenv("PATH", fake_smi_path)
    monkeypatch.setenv(CUDA_ENVVAR, "2,0")
    assert get_available_gpus.main() == 0
    assert capsys.readouterr().out == "2,0\n"
    monkeypatch.delenv(CUDA_ENVVAR)
    get_available_gpus.main()
    assert capsys.readouterr().out == "0,1,2\n"
    assert (
        get_available_gpus.get_gpus_without_triggering_pytorch_cuda_initialization
        is gpu_utils.get_gpus_without_triggering_pytorch_cuda_initialization
    )


def test_get_available_gpus_runs_as_a_module(fake_smi_path: str) -> None:
    env = {**os.environ, "PATH": fake_smi_path, CUDA_ENVVAR: "1"}
    result = subprocess.run(
        [sys.executable, "-m", "sample_factory.utils.get_available_gpus"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0 and result.stdout == "1\n", result.stderr
