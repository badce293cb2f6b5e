"""Two-rank (and three-rank) runs of the collectives, the cross-rank checks and the fault
handling, each a real ``mpiexec`` job."""
from mpirun import launcher, mpiexec, python


def test_every_collective_on_two_ranks_through_the_launcher():
    r = launcher("collectives.py")
    assert r.returncode == 0, r
    assert "rank 0: collectives ok" in r.stdout and "rank 1: collectives ok" in r.stdout, r


def test_every_collective_on_three_ranks():
    r = mpiexec("collectives.py", n=3)
    assert r.returncode == 0, r
    assert r.stdout.count("collectives ok") == 3, r


def test_mismatched_calls_raise_on_every_rank_and_the_group_survives():
    r = mpiexec("mismatch.py")
    assert r.returncode == 0, r
    assert r.stdout.count("mismatch ok") == 2, r


def test_a_rank_that_raises_ends_the_job_within_seconds():
    r = mpiexec("faults.py", "raise", timeout=60)
    assert r.returncode != 0, r
    assert r.elapsed < 20, r
    assert "rank 1 failed on purpose" in r.stderr and "aborting the job" in r.stderr, r
    assert "finished" not in r.stdout, r


def test_sys_exit_under_the_launcher_ends_the_job_with_its_status():
    r = launcher("faults.py", "exit", timeout=60)
    assert r.returncode == 3, r
    assert r.elapsed < 20 and "exited with status 3" in r.stderr, r


def test_a_timeout_given_to_init_process_group_is_enforced():
    r = mpiexec("faults.py", "timeout", timeout=60)
    assert r.returncode != 0, r
    assert "did not complete within 1.0 s" in r.stderr and r.elapsed < 25, r  # rank 1 would sleep 30 s


def test_plain_python_is_a_one_process_world():
    r = python("single.py")
    assert r.returncode == 0 and "single ok" in r.stdout, r


def test_launcher_started_by_a_foreign_mpi_is_refused():
    # a launcher announcing 2 processes while MPI sees one (torchrun, or another MPI's mpiexec)
    r = python("single.py", env={"WORLD_SIZE": "2", "RANK": "0"})
    assert r.returncode != 0, r
    assert "started 2 processes (WORLD_SIZE=2) but MPI sees only this one" in r.stderr, r
    assert "ember.distributed.run --nproc" in r.stderr, r
