"""DistributedDataParallel on two ranks, each a real ``mpiexec`` job."""
from mpirun import mpiexec


def test_ddp_training_matches_one_process_on_the_concatenated_batches():
    # SGD with momentum and weight decay, Adam, RMSprop with gradient_as_bucket_view
    r = mpiexec("ddp_train.py")
    assert r.returncode == 0, r
    for what in ("ddp sgd ok", "ddp adam ok", "ddp rmsprop view ok"):
        assert r.stdout.count(what) == 2, r


def test_ddp_broadcast_buffers_no_sync_unused_parameters_and_refusals():
    r = mpiexec("ddp_features.py")
    assert r.returncode == 0, r
    assert r.stdout.count("ddp features ok") == 2, r
