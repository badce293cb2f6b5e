"""DataLoader throughput on in-memory data, the everyday case: one shuffled epoch of a
``TensorDataset`` of 8192 MNIST-sized samples (1x28x28 float32 and an int64 label) in batches of
64, in the main process. The hand-written numpy version draws a permutation and gathers each
batch with fancy indexing (what a loader must do at least); PyTorch runs its own DataLoader on
the same arrays. Throughput in samples/s = 8192 / time."""
import numpy as np

import ember
from benchmarks.registry import workload
from ember.utils.data import DataLoader, TensorDataset

N, BATCH = 8192, 64


def _arrays():
    rng = np.random.default_rng(0)
    return rng.standard_normal((N, 1, 28, 28), dtype=np.float32), rng.integers(0, 10, N)


def _epoch(loader):
    def run():
        for _ in loader:
            pass
    return run


@workload("DataLoader epoch, 8192 samples 1x28x28, batch 64, shuffled", "data",
          unit="8192 samples")
def loader_epoch(ctx):
    x, y = _arrays()
    ember.manual_seed(0)
    ds = TensorDataset(ember.from_numpy(x), ember.from_numpy(y))
    out = {"ember": _epoch(DataLoader(ds, batch_size=BATCH, shuffle=True)),
           "note": "samples/s = 8192 / time; workers=0"}
    rng = np.random.default_rng(1)

    def np_epoch():
        perm = rng.permutation(N)
        for i in range(0, N, BATCH):
            j = perm[i:i + BATCH]
            x[j], y[j]
    out["numpy"] = np_epoch
    if ctx.torch is not None:
        torch = ctx.torch
        tds = torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y))
        out["torch"] = _epoch(torch.utils.data.DataLoader(tds, batch_size=BATCH, shuffle=True))
    return out
