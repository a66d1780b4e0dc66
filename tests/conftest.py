import os
import sys

# tests import their helpers (tests/sf_run.py) as top-level modules
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# bench scripts append measured records to bench/results/ by default; a test's records go to a scratch folder
if "SF_BENCH_RESULTS_DIR" not in os.environ:
    import tempfile

    os.environ["SF_BENCH_RESULTS_DIR"] = tempfile.mkdtemp(prefix="sf-test-records-")
