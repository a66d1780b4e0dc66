"""Helpers of ``sample_factory.utils.utils``: booleans, folders, static_vars and the re-exported CPU pinning."""

from __future__ import annotations

import threading
from argparse import ArgumentTypeError

import pytest

from sample_factory.utils.utils import cores_for_worker_process, safe_ensure_dir_exists, static_vars, str2bool


def test_str2bool_takes_sample_factory_2_parameter_name():
    assert str2bool(v="yes") is True and str2bool(v="False") is False and str2bool(True) is True
    with pytest.raises(ArgumentTypeError, match="not a boolean"):
        str2bool(v="maybe")


def test_safe_ensure_dir_exists_with_concurrent_creators(tmp_path):
    target = tmp_path / "a" / "b" / "c"
    errors: list[BaseException] = []
    start = threading.Barrier(8)

    def create() -> None:
        start.wait()
        try:
            assert safe_ensure_dir_exists(str(target)) == str(target)
        except BaseException as exc:  # noqa: BLE001  (collected and re-checked in the main thread)
            errors.append(exc)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and target.is_dir()


def test_safe_ensure_dir_exists_refuses_a_file(tmp_path):
    path = tmp_path / "taken"
    path.write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        safe_ensure_dir_exists(str(path))


def test_static_vars_sets_attributes_kept_across_calls():
    @static_vars(calls=0, seen=None)
    def counter() -> int:
        counter.calls += 1
        return counter.calls

    assert counter.seen is None
    assert [counter(), counter(), counter()] == [1, 2, 3]


def test_cores_for_worker_process_reexported():
    from sample_factory.utils.processes import cores_for_worker_process as original

    assert cores_for_worker_process is original
