"""GPU selection without CUDA: nvidia-smi parsing, CUDA_VISIBLE_DEVICES rules, round-robin assignment, the device of
each policy and of its published weights (device counts are faked)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest
import torch

from sample_factory.utils import gpu_utils
from sample_factory.utils.attr_dict import AttrDict
from sample_factory.utils.gpu_utils import (
    CUDA_ENVVAR,
    choose_policy_device,
    cuda_available,
    env_actions_device,
    get_available_gpus,
    get_gpus_without_triggering_pytorch_cuda_initialization,
    gpus_for_process,
    policy_device,
    set_global_cuda_envvars,
    set_gpus_for_process,
    shared_weights_device,
    visible_cuda_device_count,
    weights_buffer_device,
)

NVIDIA_SMI_OUTPUT = """\
GPU 0: NVIDIA H200 (UUID: GPU-aaaa1111-0000-0000-0000-000000000000)
GPU 1: NVIDIA H200 (UUID: GPU-bbbb2222-0000-0000-0000-000000000000)
  MIG 1g.18gb     Device  0: (UUID: MIG-cccc3333-0000-0000-0000-000000000000)
GPU 2: NVIDIA H200 (UUID: GPU-dddd4444-0000-0000-0000-000000000000)
GPU 3: NVIDIA H200 (UUID: GPU-eeee5555-0000-0000-0000-000000000000)
"""


@pytest.fixture
def fake_smi_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH holds only a fake ``nvidia-smi`` that lists four GPUs."""
    (tmp_path / "smi_output.txt").write_text(NVIDIA_SMI_OUTPUT)
    script = tmp_path / "nvidia-smi"
    script.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdout.write(open({str(tmp_path / 'smi_output.txt')!r}).read())\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": str(tmp_path)}


def test_parse_nvidia_smi_ignores_mig_lines() -> None:
    parsed = gpu_utils._parse_nvidia_smi(NVIDIA_SMI_OUTPUT)
    assert [index for index, _ in parsed] == [0, 1, 2, 3]
    assert parsed[1][1] == "GPU-bbbb2222-0000-0000-0000-000000000000"


def test_no_nvidia_smi_means_no_gpus(tmp_path: Path) -> None:
    assert get_gpus_without_triggering_pytorch_cuda_initialization({"PATH": str(tmp_path)}) == []


def test_failing_nvidia_smi_means_no_gpus(tmp_path: Path) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text("#!/bin/sh\necho 'NVIDIA-SMI has failed' >&2\nexit 9\n")
    script.chmod(0o755)
    assert get_gpus_without_triggering_pytorch_cuda_initialization({"PATH": str(tmp_path)}) == []


def test_all_gpus_listed_without_visible_devices(fake_smi_env: dict[str, str]) -> None:
    assert get_gpus_without_triggering_pytorch_cuda_initialization(fake_smi_env) == [0, 1, 2, 3]


@pytest.mark.parametrize(
    ("visible", "expected"),
    [
        ("2,0", [2, 0]),
        ("", []),
        ("-1", []),
        ("1,-1,3", [1]),  # CUDA stops at the first entry that names no device
        ("3,7,1", [3]),
        ("GPU-dddd4444", [2]),
        ("eeee5555,0", [3, 0]),
    ],
)
def test_visible_devices_narrow_the_list(fake_smi_env: dict[str, str], visible: str, expected: list[int]) -> None:
    env = {**fake_smi_env, CUDA_ENVVAR: visible}
    assert get_gpus_without_triggering_pytorch_cuda_initialization(env) == expected


def test_available_gpus_trusts_numeric_visible_devices(tmp_path: Path) -> None:
    """No nvidia-smi on this PATH: the answer can only have come from the variable."""
    assert get_available_gpus({"PATH": str(tmp_path), CUDA_ENVVAR: "4, 6"}) == [4, 6]
    assert get_available_gpus({"PATH": str(tmp_path), CUDA_ENVVAR: ""}) == []


def test_available_gpus_resolves_uuids_through_nvidia_smi(fake_smi_env: dict[str, str]) -> None:
    assert get_available_gpus({**fake_smi_env, CUDA_ENVVAR: "GPU-bbbb2222"}) == [1]


@pytest.mark.parametrize(
    ("process_idx", "per_process", "mask", "expected"),
    [
        (0, 1, None, [0]),
        (1, 1, None, [1]),
        (5, 1, None, [1]),  # round-robin over 4 GPUs
        (1, 2, None, [2, 3]),
        (2, 2, None, [0, 1]),
        (1, 3, None, [3, 0, 1]),
        (0, 1, [1, 3], [1]),
        (1, 1, [1, 3], [3]),
        (2, 1, [1, 3], [1]),
        (0, 0, None, []),
    ],
)
def test_gpus_for_process(
    monkeypatch: pytest.MonkeyPatch, process_idx: int, per_process: int, mask: list[int] | None, expected: list[int]
) -> None:
    monkeypatch.setenv(CUDA_ENVVAR, "0,1,2,3")
    assert gpus_for_process(process_idx, per_process, mask) == expected


def test_gpu_mask_positions_refer_to_available_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CUDA_ENVVAR, "4,6")
    assert gpus_for_process(0, 1, gpu_mask=[1]) == [6]
    with pytest.raises(ValueError, match="--actor_worker_gpus"):
        gpus_for_process(0, 1, gpu_mask=[2])


def test_gpus_for_process_without_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CUDA_ENVVAR, "")
    assert gpus_for_process(3, 2, gpu_mask=[0]) == []


def test_set_gpus_for_process_sets_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CUDA_ENVVAR, "0,1,2,3")
    assert set_gpus_for_process(1, 2, "learner") == [2, 3]
    assert os.environ[CUDA_ENVVAR] == "2,3"
    assert set_gpus_for_process(0, 0, "rollout worker") == []
    assert os.environ[CUDA_ENVVAR] == ""


def test_global_envvars_cpu_hides_gpus_and_keeps_user_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(CUDA_ENVVAR, raising=False)
    set_global_cuda_envvars(AttrDict(device="cpu", actor_worker_gpus=[]))
    assert os.environ[CUDA_ENVVAR] == ""
    monkeypatch.setenv(CUDA_ENVVAR, "1")
    set_global_cuda_envvars(AttrDict(device="cpu", actor_worker_gpus=[]))
    assert os.environ[CUDA_ENVVAR] == "1"


def test_global_envvars_gpu_lists_detected_gpus(monkeypatch: pytest.MonkeyPatch, fake_smi_env: dict[str, str]) -> None:
    monkeypatch.delenv(CUDA_ENVVAR, raising=False)
    monkeypatch.setenv("PATH", fake_smi_env["PATH"])
    set_global_cuda_envvars(AttrDict(device="gpu", actor_worker_gpus=[]))
    assert os.environ[CUDA_ENVVAR] == "0,1,2,3"


def test_cuda_available_is_false_without_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # makes "import torch" raise ImportError
    assert cuda_available() is False


def test_cuda_available_matches_torch() -> None:
    torch = pytest.importorskip("torch")
    assert cuda_available() is torch.cuda.is_available()


def test_global_envvars_cpu_keeps_gpus_that_rollout_workers_ask_for(
    monkeypatch: pytest.MonkeyPatch, fake_smi_env: dict[str, str]
) -> None:
    monkeypatch.delenv(CUDA_ENVVAR, raising=False)
    monkeypatch.setenv("PATH", fake_smi_env["PATH"])
    set_global_cuda_envvars(AttrDict(device="cpu", actor_worker_gpus=[1]))
    assert os.environ[CUDA_ENVVAR] == "0,1,2,3"


# ---- devices of the learner and inference workers ---------------------------------------------------------------


@pytest.fixture
def fake_cuda(monkeypatch: pytest.MonkeyPatch):
    """Makes torch report ``count`` CUDA devices (0: no CUDA at all) without any GPU."""

    def set_count(count: int) -> None:
        monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: count)

    return set_count


@pytest.mark.parametrize(
    ("flag", "policy_id", "num_gpus", "expected"),
    [
        ("gpu", 0, 1, "cuda:0"),
        ("gpu", 3, 1, "cuda:0"),
        ("gpu", 1, 2, "cuda:1"),
        ("gpu", 2, 2, "cuda:0"),  # policies spread round-robin over the visible GPUs
        ("gpu", 5, 4, "cuda:1"),
        ("gpu", 1, 0, "cpu"),  # no GPU visible
        ("cpu", 1, 4, "cpu"),
    ],
)
def test_choose_policy_device(flag: str, policy_id: int, num_gpus: int, expected: str) -> None:
    assert choose_policy_device(flag, policy_id, num_gpus) == torch.device(expected)


def test_choose_policy_device_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="--device='tpu'"):
        choose_policy_device("tpu", 0, 1)
    with pytest.raises(ValueError, match="policy_id=-1"):
        choose_policy_device("gpu", -1, 1)


def test_policy_device_counts_the_gpus_this_process_sees(fake_cuda) -> None:
    fake_cuda(3)
    cfg = AttrDict(device="gpu")
    assert [policy_device(cfg, p) for p in range(4)] == [torch.device("cuda", i) for i in (0, 1, 2, 0)]
    assert policy_device(cfg) == torch.device("cuda", 0)
    assert visible_cuda_device_count() == 3


def test_policy_device_falls_back_to_the_cpu_without_cuda(fake_cuda, monkeypatch: pytest.MonkeyPatch) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(gpu_utils.log, "warning", lambda msg, *args: warnings.append(msg % args))
    fake_cuda(0)
    assert policy_device(AttrDict(device="gpu"), 1) == torch.device("cpu")
    assert warnings == ["--device=gpu but CUDA is not available: policy 1 learns and acts on the CPU"]


def test_policy_device_on_the_cpu_never_asks_cuda(monkeypatch: pytest.MonkeyPatch) -> None:
    """--device=cpu must not initialise CUDA (which would fix CUDA_VISIBLE_DEVICES for the process)."""

    def forbidden() -> None:
        raise AssertionError("torch.cuda was asked with --device=cpu")

    monkeypatch.setattr(torch.cuda, "is_available", forbidden)
    monkeypatch.setattr(torch.cuda, "device_count", forbidden)
    assert policy_device(AttrDict(device="cpu"), 2) == torch.device("cpu")


@pytest.mark.parametrize(
    ("writer", "readers", "expected"),
    [
        ("cuda:0", ["cuda:0", "cuda:0"], "cuda:0"),  # same GPU: the copy stays there
        ("cuda:1", ["cuda:1"], "cuda:1"),
        ("cuda:0", ["cuda:0", "cuda:1"], "cpu"),  # one reader on another GPU: host memory
        ("cuda:0", ["cpu"], "cpu"),
        ("cpu", ["cpu"], "cpu"),
        ("cuda", ["cuda:0"], "cpu"),  # "the current device" is not known to be cuda:0
        ("cuda:0", [], "cpu"),
    ],
)
def test_shared_weights_device(writer: str, readers: list[str], expected: str) -> None:
    assert shared_weights_device(writer, readers) == torch.device(expected)


def test_weights_buffer_follows_the_policy_onto_its_gpu(fake_cuda) -> None:
    fake_cuda(2)
    cfg = AttrDict(device="gpu", policy_workers_per_policy=3)
    assert [weights_buffer_device(cfg, p) for p in range(3)] == [torch.device("cuda", i) for i in (0, 1, 0)]
    fake_cuda(0)
    assert weights_buffer_device(cfg, 1) == torch.device("cpu")
    assert weights_buffer_device(AttrDict(device="cpu"), 0) == torch.device("cpu")


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (dict(env_gpu_actions=False, device="gpu"), None),
        (dict(env_gpu_actions=True, device="gpu"), torch.device("cuda")),  # the rollout worker's (first) GPU
        (dict(env_gpu_actions=True, device="cpu"), torch.device("cpu")),
    ],
)
def test_env_actions_device(flags: dict, expected: torch.device | None) -> None:
    assert env_actions_device(AttrDict(flags)) == expected
