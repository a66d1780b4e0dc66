import pytest
import slurm_cluster


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A private one-node Slurm cluster for one test module; skipped (with the reason) where it cannot run."""
    reason = slurm_cluster.unavailable_reason()
    if reason:
        pytest.skip(reason)
    cluster = slurm_cluster.start(str(tmp_path_factory.mktemp("slurm")))
    try:
        yield cluster
    finally:
        slurm_cluster.stop(cluster)
