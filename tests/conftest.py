import os
import sys

# tests import their helpers (tests/sf_run.py) as top-level modules
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# bench scripts append measured records to bench/results/ by default; a test's records go to a scratch folder
if "SF_BENCH_RESULTS_DIR" not in os.environ:
    import tempfile

    os.environ["SF_BENCH_RESULTS_DIR"] = tempfile.mkdtemp(prefix="sf-test-records-")


import pytest  # noqa: E402  (after the path set-up above)


@pytest.fixture
def public_torch_paths(monkeypatch):
    """torch's private paths off for the test, as on a torch they were not verified on (``tests/torch_paths.py``)."""
    from sample_factory.compat import torch_internals

    monkeypatch.setattr(torch_internals, "VERIFIED_TORCH", ((1, 0),))
    torch_internals.recheck()
    yield
    monkeypatch.undo()
    torch_internals.recheck()
