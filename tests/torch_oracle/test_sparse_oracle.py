"""Sparse COO tensors side by side with PyTorch: values, gradients (to the dense operand, to the
values, to a sparse leaf), sparse.sum/softmax and coalesce on the same random inputs."""
import numpy as np
import pytest
import torch

import ember


def _pair(seed, n=6, m=5, nnz=9):
    rng = np.random.default_rng(seed)
    idx = np.stack([rng.integers(0, n, nnz), rng.integers(0, m, nnz)])
    val = rng.standard_normal(nnz).astype(np.float32)
    dense = rng.standard_normal((m, 3)).astype(np.float32)
    return idx, val, dense


@pytest.mark.parametrize("seed", range(4))
def test_mm_and_gradients_match_torch(seed):
    idx, val, dense = _pair(seed)
    results = []
    for lib in (torch, ember):
        v = lib.tensor(val, requires_grad=True)
        d = lib.tensor(dense, requires_grad=True)
        s = lib.sparse_coo_tensor(lib.tensor(idx), v, (6, 5))
        leaf = lib.sparse_coo_tensor(lib.tensor(idx), lib.tensor(val), (6, 5)).requires_grad_()
        out = lib.sparse.mm(s, d)
        (out * out).sum().backward()
        lib.sparse.mm(leaf, lib.tensor(dense)).pow(2).sum().backward()
        g = leaf.grad.coalesce()
        results.append([out.detach().numpy(), v.grad.numpy(), d.grad.numpy(), s.to_dense().detach().numpy(),
                        g.indices().numpy(), g.values().numpy()])
    for a, b in zip(*results):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_coalesce_sum_softmax_match_torch(seed):
    idx, val, _ = _pair(seed)
    t = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(val), (6, 5))
    e = ember.sparse_coo_tensor(ember.tensor(idx), ember.tensor(val), (6, 5))
    tc, ec = t.coalesce(), e.coalesce()
    np.testing.assert_array_equal(ec.indices().numpy(), tc.indices().numpy())
    np.testing.assert_allclose(ec.values().numpy(), tc.values().numpy(), rtol=1e-6)
    for dim in (0, 1):
        np.testing.assert_allclose(ember.sparse.sum(e, dim).to_dense().numpy(),
                                   torch.sparse.sum(t, dim).to_dense().numpy(), rtol=1e-5, atol=1e-6)
        ts, es = torch.sparse.softmax(t, dim).coalesce(), ember.sparse.softmax(e, dim)
        np.testing.assert_allclose(es.values().numpy(), ts.values().numpy(), rtol=1e-5)
    dense = np.where(np.random.default_rng(seed).random((4, 3)) > 0.5, 1.0, 0.0).astype(np.float32)
    np.testing.assert_array_equal(ember.tensor(dense).to_sparse().indices().numpy(),
                                  torch.tensor(dense).to_sparse().indices().numpy())
