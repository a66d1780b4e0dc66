"""PolicyWeights: the seqlock (torn copies detected and redone, a writer never waits for a reader), failed publishes,
where the published copy lives, and a writer process racing a reader."""

from __future__ import annotations

import multiprocessing
import threading
import time
from types import SimpleNamespace

import pytest
import torch
from torch import nn

from sample_factory.algo.utils import policy_weights
from sample_factory.algo.utils.policy_weights import PolicyWeights, wait_for_copies


def _filled(model: nn.Module, value: float) -> dict[str, torch.Tensor]:
    """``model``'s state dict with every entry set to ``value``: a version anyone can recognise in every tensor."""
    return {key: torch.full_like(tensor, value) for key, tensor in model.state_dict().items()}


def _values(model: nn.Module) -> set[float]:
    return {float(v) for tensor in model.state_dict().values() for v in tensor.flatten().unique()}


class PausingLinear(nn.Linear):
    """A layer whose weights load, then wait for ``resume``: a reader paused in the middle of its copy."""

    def __init__(self) -> None:
        super().__init__(4, 4)
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.pause_next_load = True

    def _load_from_state_dict(self, *args, **kwargs) -> None:
        super()._load_from_state_dict(*args, **kwargs)
        if self.pause_next_load:
            self.pause_next_load = False
            self.paused.set()
            assert self.resume.wait(timeout=30), "the test never resumed the reader"


def _reader_model() -> nn.Sequential:
    return nn.Sequential(PausingLinear(), nn.Linear(4, 4))


def test_a_publish_during_a_copy_is_detected_and_the_copy_redone() -> None:
    """The reader copies layer 0 of version 1, pauses; version 2 is published in full (the writer does not wait for
    the paused reader); the reader copies layer 1 of version 2. Without the sequence check it would keep that mix."""
    model = _reader_model()
    weights = PolicyWeights(_filled(model, 1.0), threading.Lock())
    weights.publish(_filled(model, 1.0), version=1)
    attempts: list[int | None] = []
    reader = threading.Thread(target=lambda: attempts.append(weights.try_load_into(model)))
    reader.start()
    try:
        assert model[0].paused.wait(timeout=30)
        writer = threading.Thread(target=weights.publish, args=(_filled(model, 2.0), 2))
        writer.start()
        writer.join(timeout=10)
        assert not writer.is_alive(), "the learner waited for a reader"
        assert weights.latest_version() == 2
    finally:
        model[0].resume.set()
        reader.join(timeout=30)
    assert attempts == [None] and weights.torn_reads == 1
    assert _values(model[0]) == {1.0} and _values(model[1]) == {2.0}  # what a reader without the check would use
    assert weights.load_into(model) == 2 and _values(model) == {2.0}
    assert weights.torn_reads == 1


def test_a_reader_waits_while_a_publish_is_under_way() -> None:
    model = nn.Linear(3, 3)
    weights = PolicyWeights(_filled(model, 1.0), threading.Lock())
    weights.sequence[0] += 1  # as the writer leaves it while copying
    done = threading.Event()
    reader = threading.Thread(target=lambda: (weights.load_into(model), done.set()))
    reader.start()
    assert not done.wait(timeout=0.3), "a reader copied while a publish was under way"
    weights.tensors["weight"].fill_(5.0)
    weights.version[0] = 5
    weights.sequence[0] += 1
    assert done.wait(timeout=10)
    reader.join()
    assert model.weight.eq(5.0).all() and weights.torn_reads == 0


def test_a_publish_that_does_not_fit_writes_nothing_and_leaves_readers_free() -> None:
    model = nn.Linear(3, 3)
    weights = PolicyWeights(_filled(model, 1.0), threading.Lock())
    weights.publish(_filled(model, 2.0), version=2)
    with pytest.raises(KeyError, match="'extra' is not among the published weights"):
        weights.publish({"weight": torch.full((3, 3), 9.0), "extra": torch.zeros(1)}, version=3)
    with pytest.raises(RuntimeError, match=r"'bias' has shape \(4,\), the published weights \(3,\)"):
        weights.publish({"weight": torch.full((3, 3), 9.0), "bias": torch.zeros(4)}, version=3)
    assert int(weights.sequence[0]) % 2 == 0 and weights.latest_version() == 2
    assert weights.load_into(model) == 2 and _values(model) == {2.0}


def test_a_copy_failing_mid_publish_does_not_leave_readers_waiting_forever() -> None:
    model = nn.Linear(3, 3)
    weights = PolicyWeights(_filled(model, 1.0), threading.Lock())

    class Exploding(dict):
        def items(self):
            yield "weight", torch.full((3, 3), 7.0)
            raise OSError("device lost")

    with pytest.raises(OSError, match="device lost"):
        weights.publish(Exploding(weight=torch.zeros(3, 3), bias=torch.zeros(3)), version=9)
    assert int(weights.sequence[0]) % 2 == 0 and weights.latest_version() == 0


def test_host_copy_is_in_shared_memory_and_a_device_copy_never_touches_the_host() -> None:
    """The meta device stands in for a GPU: any trip of the data through host memory fails on it."""
    host = PolicyWeights(nn.Linear(3, 2).state_dict(), threading.Lock())
    assert host.device == torch.device("cpu")
    assert all(tensor.is_shared() for tensor in host.tensors.values())
    on_device = nn.Linear(3, 2).to("meta")
    weights = PolicyWeights(on_device.state_dict(), threading.Lock(), device="meta")
    assert {tensor.device for tensor in weights.tensors.values()} == {torch.device("meta")}
    weights.publish(on_device.state_dict(), version=4)
    assert weights.latest_version() == 4 and weights.load_into(on_device) == 4


def test_wait_for_copies_waits_on_each_cuda_stream_once(monkeypatch: pytest.MonkeyPatch) -> None:
    waited: list[str] = []

    class FakeEvent:
        def record(self, stream) -> None:
            self.stream = stream

        def synchronize(self) -> None:
            waited.append(self.stream.device)

    monkeypatch.setattr(torch.cuda, "Event", FakeEvent)
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device: SimpleNamespace(device=str(device)))
    wait_for_copies([torch.device("cuda", 1), torch.device("cpu"), torch.device("cuda", 1), torch.device("meta")])
    assert waited == ["cuda:1"]
    wait_for_copies([torch.device("cpu")])
    assert waited == ["cuda:1"]


def test_publish_waits_for_its_device_copies_before_announcing_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a GPU the copies are asynchronous: the version may only move once they have landed."""
    model = nn.Linear(3, 3)
    weights = PolicyWeights(_filled(model, 1.0), threading.Lock())
    seen: list[tuple[int, int]] = []
    monkeypatch.setattr(
        policy_weights,
        "wait_for_copies",
        lambda devices: seen.append((int(weights.sequence[0]), weights.latest_version())),
    )
    weights.publish(_filled(model, 2.0), version=2)
    assert seen == [(1, 0)]  # called while the counter was odd and the old version still announced


# ---------------------------------------------------------------- a writer process racing a reader
NUM_VERSIONS = 300


def _publish_versions(weights: PolicyWeights, started: multiprocessing.Event) -> None:
    """Runs in a spawned process: publishes versions 1..NUM_VERSIONS back to back, each a uniform fill."""
    template = {key: torch.empty_like(tensor) for key, tensor in weights.tensors.items()}
    started.set()
    for version in range(1, NUM_VERSIONS + 1):
        weights.publish({key: tensor.fill_(float(version)) for key, tensor in template.items()}, version)


def test_a_reader_racing_a_writer_process_only_ever_gets_whole_versions() -> None:
    model = nn.Sequential(*(nn.Linear(256, 256) for _ in range(8)))  # 8 x 64k weights: copies take a while
    weights = PolicyWeights(_filled(model, 0.0), multiprocessing.get_context("spawn").Lock())
    ctx = multiprocessing.get_context("spawn")
    started = ctx.Event()
    writer = ctx.Process(target=_publish_versions, args=(weights, started))
    writer.start()
    loads = 0
    try:
        assert started.wait(timeout=120)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            version = weights.load_into(model)
            loads += 1
            assert _values(model) == {float(version)}, f"a torn copy was returned as version {version}"
            if version == NUM_VERSIONS:
                break
    finally:
        writer.join(timeout=60)
        if writer.is_alive():
            writer.kill()
    assert writer.exitcode == 0 and weights.latest_version() == NUM_VERSIONS
    assert loads > 1
