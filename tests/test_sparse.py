"""Sparse COO tensors (docs/sparse.md): construction and its errors, to_dense/to_sparse/coalesce,
the accessors, sparse @ dense with gradients to the dense operand and to the values, sparse.sum
and softmax, the operators torch supports, clear refusals of every other op, pickling, a GCN layer
that trains; the device-parametrised tests also run on opencl where an opencl device exists."""
import io
import pickle

import numpy as np
import pytest

import ember

IDX = [[0, 1, 1], [2, 0, 2]]
VAL = [3.0, 4.0, 5.0]
DENSE = [[0.0, 0.0, 3.0], [4.0, 0.0, 5.0]]


def _device(name):
    if name == "cpu":
        return "cpu"
    try:
        ember.zeros(1, device=name)
    except Exception:  # noqa: BLE001 - no opencl platform here
        pytest.skip(f"no {name} device")
    return name


DEVICES = ["cpu", "opencl"]


def _s(device="cpu", **kw):
    return ember.sparse_coo_tensor(ember.tensor(IDX, device=device), ember.tensor(VAL, device=device), (2, 3), **kw)


def test_construction_and_accessors():
    s = _s()
    assert s.is_sparse and s.layout is ember.sparse_coo and ember.ones(1).layout is ember.strided
    assert repr(ember.sparse_coo) == "ember.sparse_coo" and not ember.ones(1).is_sparse
    assert s.shape == (2, 3) and s.dtype is ember.float32 and s.device == ember.device("cpu")
    assert s._nnz() == 3 and s.sparse_dim() == 2 and s.dense_dim() == 0 and not s.is_coalesced()
    assert s._indices().tolist() == IDX and s._values().tolist() == VAL
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.values()
    c = s.coalesce()
    assert c.is_coalesced() and c.indices().tolist() == IDX and c.values().tolist() == VAL
    assert ember.ones(2, 3).sparse_dim() == 0 and ember.ones(2, 3).dense_dim() == 2


def test_construction_forms_and_errors():
    assert ember.sparse_coo_tensor(IDX, [1, 2, 3]).dtype is ember.int64
    assert ember.sparse_coo_tensor(IDX, VAL).shape == (2, 3)  # size inferred
    assert ember.sparse_coo_tensor(IDX, VAL, (2, 3), dtype=ember.float64).dtype is ember.float64
    assert ember.sparse_coo_tensor(IDX, VAL, (2, 3), is_coalesced=True).is_coalesced()
    e = ember.sparse_coo_tensor((2, 3))
    assert e._nnz() == 0 and e.to_dense().tolist() == [[0.0] * 3] * 2
    h = ember.sparse_coo_tensor(IDX, ember.ones(3, 2))
    assert h.shape == (2, 3, 2) and h.dense_dim() == 1 and h.to_dense().sum().item() == 6
    with pytest.raises(RuntimeError, match="same nnz"):
        ember.sparse_coo_tensor(IDX, [1.0] * 4, (2, 3))
    with pytest.raises(RuntimeError, match="sparse_dim x nnz"):
        ember.sparse_coo_tensor([0, 1], [1.0, 2.0], (2, 3))
    with pytest.raises(RuntimeError, match="size is inconsistent with indices"):
        ember.sparse_coo_tensor(IDX, VAL, (1, 3), check_invariants=True)
    with pytest.raises(RuntimeError, match="negative index"):
        ember.sparse_coo_tensor([[0, -1], [0, 0]], [1.0, 2.0], (2, 3), check_invariants=True)
    for f in (lambda: ember.ones(2).indices(), lambda: ember.ones(2).values(), lambda: ember.ones(2).coalesce()):
        with pytest.raises(RuntimeError, match="expected sparse"):
            f()


@pytest.mark.parametrize("where", DEVICES)
def test_dense_round_trip_and_coalesce(where):
    device = _device(where)
    s = _s(device)
    assert s.to_dense().tolist() == DENSE
    dup = ember.sparse_coo_tensor([[1, 0, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3), device=device)
    c = dup.coalesce()
    assert c.indices().tolist() == [[0, 1], [0, 2]] and c.values().tolist() == [2.0, 4.0]
    assert dup.to_dense().tolist() == [[2.0, 0, 0], [0, 0, 4.0]]
    d = ember.tensor(DENSE, device=device)
    sp = d.to_sparse()
    assert sp.is_coalesced() and sp.indices().tolist() == [[0, 1, 1], [2, 0, 2]] and sp.to_dense().tolist() == DENSE
    row = d.to_sparse(1)
    assert row.indices().tolist() == [[0, 1]] and row.values().tolist() == DENSE and d.to_sparse_coo()._nnz() == 3
    assert s.to_sparse() is s and d.to_dense() is d


@pytest.mark.parametrize("where", DEVICES)
def test_sparse_mm_values_and_gradients(where):
    device = _device(where)
    rng = np.random.default_rng(0)
    dn = rng.standard_normal((3, 2)).astype(np.float32)
    v = ember.tensor(VAL, device=device, requires_grad=True)
    w = ember.tensor(dn, device=device, requires_grad=True)
    s = ember.sparse_coo_tensor(ember.tensor(IDX, device=device), v, (2, 3))
    assert s.requires_grad
    out = ember.sparse.mm(s, w)
    np.testing.assert_allclose(out.detach().cpu().numpy(), np.array(DENSE) @ dn, rtol=1e-5)
    out.sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), np.array(DENSE).T @ np.ones((2, 2)), rtol=1e-6)
    # d(sum(S @ W)) / d S[r, c] = sum_j W[c, j]
    np.testing.assert_allclose(v.grad.cpu().numpy(), dn.sum(1)[[2, 0, 2]], rtol=1e-5)
    for product in (lambda a, b: a @ b, ember.mm, ember.matmul, ember.spmm, ember.sparse.mm):
        np.testing.assert_allclose(product(s.detach(), w.detach()).cpu().numpy(), np.array(DENSE) @ dn, rtol=1e-5)
    vec = (s.detach() @ ember.ones(3, device=device)).cpu().tolist()
    assert vec == [3.0, 9.0]


def test_gradient_of_a_sparse_leaf_is_sparse_at_its_indices():
    s = _s().requires_grad_()
    assert s.is_leaf and s.requires_grad and s.grad is None
    w = ember.ones(3, 2)
    ember.sparse.mm(s, w).sum().backward()
    g = s.grad
    assert g.is_sparse and g.indices().tolist() == IDX and g.values().tolist() == [2.0, 2.0, 2.0]
    assert s.grad is g
    s.grad = None
    assert s.grad is None
    # an uncoalesced leaf: one entry per distinct position, as torch's
    u = ember.sparse_coo_tensor([[0, 0], [1, 1]], [1.0, 2.0], (2, 2)).requires_grad_()
    (u.to_dense() * ember.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    assert u.grad.indices().tolist() == [[0], [1]] and u.grad.values().tolist() == [2.0]
    # a tensor the values were detached from does not take gradients
    r = ember.sparse_coo_tensor(IDX, VAL, (2, 3), requires_grad=True)
    assert r.requires_grad and not r.detach().requires_grad
    ember.sparse.sum(r).backward()
    assert r.grad.values().tolist() == [1.0, 1.0, 1.0]


def test_to_sparse_and_to_dense_are_differentiable():
    d = ember.tensor(DENSE, requires_grad=True)
    ember.sparse.mm(d.to_sparse(), ember.ones(3, 2)).sum().backward()
    assert d.grad.tolist() == [[0.0, 0.0, 2.0], [2.0, 0.0, 2.0]]  # only the nonzero entries
    v = ember.tensor(VAL, requires_grad=True)
    (ember.sparse_coo_tensor(IDX, v, (2, 3)).to_dense() * ember.tensor([[1.0, 2, 3], [4, 5, 6]])).sum().backward()
    assert v.grad.tolist() == [3.0, 4.0, 6.0]


def test_sparse_sum_softmax_and_operators():
    s = _s()
    assert ember.sparse.sum(s).item() == 12.0 and s.sum().item() == 12.0 and s.sum(0).to_dense().tolist() == [4, 0, 8]
    s0 = ember.sparse.sum(s, 0)
    assert s0.is_sparse and s0.indices().tolist() == [[0, 2]] and s0.values().tolist() == [4.0, 8.0]
    assert ember.sparse.sum(s, 1).to_dense().tolist() == [3.0, 9.0]
    assert ember.sparse.sum(s, (0, 1)).item() == 12.0
    sm = ember.sparse.softmax(s, 1)
    np.testing.assert_allclose(sm.values().numpy(), [1.0, 1 / (1 + np.e), np.e / (1 + np.e)], rtol=1e-6)
    np.testing.assert_allclose(ember.sparse.log_softmax(s, 1).values().numpy(), np.log(sm.values().numpy()),
                               rtol=1e-5)
    assert (s * 2).to_dense().tolist() == [[0, 0, 6.0], [8.0, 0, 10.0]] and (2 * s).is_sparse
    assert (s / 2)._values().tolist() == [1.5, 2.0, 2.5] and (-s)._values().tolist() == [-3.0, -4.0, -5.0]
    assert (s + s).to_dense().tolist() == [[0, 0, 6.0], [8.0, 0, 10.0]] and (s - s).to_dense().sum().item() == 0
    assert s.t().shape == (3, 2) and s.t().to_dense().tolist() == np.array(DENSE).T.tolist()
    assert s.transpose(0, 1).to_dense().tolist() == np.array(DENSE).T.tolist()
    assert s.double().dtype is ember.float64 and s.double().is_sparse and s.to(ember.float32) is s
    assert s.clone()._values().tolist() == VAL and s.cpu() is s
    out = ember.sparse.addmm(ember.ones(2, 2), s, ember.ones(3, 2))
    assert out.tolist() == [[4.0, 4.0], [10.0, 10.0]]
    with pytest.raises(RuntimeError, match="sparse_coo tensor with a dense one"):
        s + ember.ones(2, 3)


@pytest.mark.parametrize("call", [
    lambda s: s.exp(), lambda s: s.view(6), lambda s: s.reshape(6), lambda s: s[0], lambda s: s.unsqueeze(0),
    lambda s: ember.relu(s), lambda s: s == s, lambda s: s.max(), lambda s: ember.cat([s, s]),
    lambda s: s.sum(0, keepdim=True),
    lambda s: s.clone().zero_(), lambda s: ember.ones(2, 3) + s, lambda s: ember.ones(2, 2) @ s,
    lambda s: s * ember.ones(2, 3), lambda s: s.tolist(), lambda s: s.data_ptr(),
], ids=["exp", "view", "reshape", "index", "unsqueeze", "relu", "eq", "max", "cat", "sum_dim", "zero_", "dense+s",
        "dense@s", "s*dense", "tolist", "data_ptr"])
def test_every_other_op_refuses_clearly(call):
    with pytest.raises((NotImplementedError, RuntimeError), match="SparseCPU|sparse"):
        call(_s())


def test_refusal_names_the_op_as_torch_does():
    with pytest.raises(NotImplementedError, match="Could not run 'aten::exp' with arguments from the 'SparseCPU'"):
        _s().exp()
    with pytest.raises(NotImplementedError, match="Cannot access storage of SparseTensorImpl"):
        _s().untyped_storage()
    with pytest.raises(TypeError, match="can't convert Sparse layout tensor to numpy"):
        _s().numpy()


def test_repr_and_pickling():
    s = _s()
    assert repr(s) == ("tensor(indices=tensor([[0, 1, 1],\n                       [2, 0, 2]]),\n"
                       "       values=tensor([3., 4., 5.]),\n       size=(2, 3), nnz=3, layout=ember.sparse_coo)")
    r = pickle.loads(pickle.dumps(s))
    assert r.is_sparse and r.to_dense().tolist() == DENSE and not r.is_coalesced()
    with pytest.raises(RuntimeError, match="does not write sparse tensors"):
        ember.save({"adj": s}, io.BytesIO())


def _gcn_data():
    rng = np.random.default_rng(1)
    n, f, c = 8, 5, 3
    edges = [(i, (i + 1) % n) for i in range(n)] + [(0, 4), (2, 6)]
    a = np.eye(n)
    for i, j in edges:
        a[i, j] = a[j, i] = 1
    dinv = 1 / np.sqrt(a.sum(1))
    a_hat = (dinv[:, None] * a * dinv[None, :]).astype(np.float32)
    x = rng.standard_normal((n, f)).astype(np.float32)
    y = rng.integers(0, c, n)
    return a_hat, x, y, rng.standard_normal((f, c)).astype(np.float32) * 0.3


def test_gcn_layer_trains_and_matches_the_dense_gradient():
    a_hat, x, y, w0 = _gcn_data()
    adj = ember.tensor(a_hat).to_sparse()
    xs, ys = ember.tensor(x), ember.tensor(y)
    w = ember.tensor(w0, requires_grad=True)
    wd = ember.tensor(w0, requires_grad=True)
    ember.nn.functional.cross_entropy(ember.sparse.mm(adj, xs @ w), ys).backward()
    ember.nn.functional.cross_entropy(ember.tensor(a_hat) @ (xs @ wd), ys).backward()
    np.testing.assert_allclose(w.grad.numpy(), wd.grad.numpy(), rtol=1e-5, atol=1e-6)
    opt = ember.optim.SGD([w], lr=0.5)
    losses = []
    for _ in range(30):
        opt.zero_grad()
        loss = ember.nn.functional.cross_entropy(ember.sparse.mm(adj, xs @ w), ys)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.8 * losses[0] and all(b < a for a, b in zip(losses, losses[1:]))
