"""ParameterServer: publish/read round trips, version bumps, the versions table, serial and multi-process modes."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest
import torch
from torch import nn

from sample_factory.algo.utils.model_sharing import ParameterServer


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def _same_weights(a: nn.Module, b: nn.Module) -> bool:
    return all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True))


def test_serial_round_trip_and_version_bumps() -> None:
    versions = torch.zeros(3, dtype=torch.int64)
    server = ParameterServer(1, versions, serial_mode=True)
    assert server.policy_version == -1
    learner_model, reader_model = _model(0), _model(1)
    server.init(learner_model, policy_version=5, device="cpu")
    assert server.actor_critic is learner_model and server.device == torch.device("cpu")
    assert versions.tolist() == [0, 5, 0]
    assert server.load_into(reader_model) == 5 and _same_weights(reader_model, learner_model)

    with torch.no_grad():
        learner_model[0].weight.add_(1.0)
    assert not _same_weights(reader_model, learner_model)
    assert server.update_weights() == 6  # no version given: one past the last
    assert server.update_weights(10) == 10
    assert versions.tolist() == [0, 10, 0] and server.policy_version == 10
    assert server.load_into(reader_model) == 10 and _same_weights(reader_model, learner_model)
    assert isinstance(server.policy_lock, type(threading.Lock()))


def test_published_weights_are_a_snapshot_not_the_live_model() -> None:
    server = ParameterServer(0, torch.zeros(1, dtype=torch.int64), serial_mode=True)
    learner_model, reader_model = _model(0), _model(1)
    server.init(learner_model)
    with torch.no_grad():
        learner_model[0].weight.add_(1.0)  # trained but not yet published
    server.load_into(reader_model)
    assert not _same_weights(reader_model, learner_model)


def test_using_it_before_init_or_with_a_bad_table_names_the_fix() -> None:
    server = ParameterServer(0, torch.zeros(1, dtype=torch.int64), serial_mode=True)
    with pytest.raises(RuntimeError, match="call init"):
        server.update_weights()
    with pytest.raises(RuntimeError, match="call init"):
        server.load_into(_model(0))
    with pytest.raises(ValueError, match="no entry in policy_versions"):
        ParameterServer(2, torch.zeros(2, dtype=torch.int64), serial_mode=True)
    with pytest.raises(ValueError, match="integer versions"):
        ParameterServer(0, torch.zeros(2), serial_mode=True)


def _reader(server: ParameterServer, wanted_version: int, results: multiprocessing.Queue) -> None:
    """Runs in a spawned process: wait for ``wanted_version`` in the shared table, then load the weights."""
    deadline = time.monotonic() + 60
    while int(server.policy_versions[server.policy_id]) < wanted_version and time.monotonic() < deadline:
        time.sleep(0.01)
    model = _model(1)
    version = server.load_into(model)
    tensors = [t.tolist() for t in model.state_dict().values()]  # plain data: this process may exit before it is read
    results.put((version, server.actor_critic is None, tensors))


def test_shared_mode_publishes_to_another_process() -> None:
    versions = torch.zeros(2, dtype=torch.int64)
    server = ParameterServer(1, versions, serial_mode=False)
    assert versions.is_shared()
    learner_model = _model(0)
    server.init(learner_model, policy_version=3)
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    reader = ctx.Process(target=_reader, args=(server, 4, results))
    reader.start()
    try:
        with torch.no_grad():
            learner_model[2].bias.fill_(0.5)
        server.update_weights(4)  # published after the reader started: only shared memory can carry it there
        version, had_no_model, tensors = results.get(timeout=120)
    finally:
        reader.join(timeout=30)
        if reader.is_alive():
            reader.kill()
    assert version == 4 and had_no_model
    for loaded, expected in zip(tensors, learner_model.state_dict().values(), strict=True):
        assert torch.equal(torch.tensor(loaded), expected)
