"""einops on ember tensors through einops's backend mechanism (ember.utils.einops_backend), whichever
of the two is imported first."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

einops = pytest.importorskip("einops", reason="the einops tests need einops (pip install einops; tox -e examples)")

import ember  # noqa: E402
from einops import einsum, pack, rearrange, reduce, repeat, unpack  # noqa: E402


def test_rearrange_reduce_repeat_match_numpy():
    a = ((np.arange(2 * 3 * 4 * 5) % 7 + 1) / 4).astype(np.float32).reshape(2, 3, 4, 5)  # prod stays finite
    x = ember.tensor(a)
    r = rearrange(x, "b c (h1 h2) w -> b (c h1) h2 w", h1=2)
    assert isinstance(r, ember.Tensor) and r.shape == (2, 6, 2, 5)
    np.testing.assert_array_equal(r.numpy(), a.reshape(2, 3, 2, 2, 5).reshape(2, 6, 2, 5))
    np.testing.assert_array_equal(rearrange(x, "b c h w -> w h c b").numpy(), a.transpose(3, 2, 1, 0))
    for op, ref in (("max", a.max), ("min", a.min), ("sum", a.sum), ("mean", a.mean), ("prod", a.prod)):
        np.testing.assert_allclose(reduce(x, "b c h w -> c", op).numpy(), ref(axis=(0, 2, 3)), rtol=1e-5)
    np.testing.assert_array_equal(reduce(x, "b c (h 2) (w 5) -> b c h w", "max").numpy(),
                                  a.reshape(2, 3, 2, 2, 1, 5).max(axis=(3, 5)))
    rep = repeat(x[0, 0], "h w -> n h w", n=3)
    assert rep.shape == (3, 4, 5) and (rep.numpy() == a[0, 0]).all()
    np.testing.assert_array_equal(repeat(x[0, 0], "h w -> (h 2) w").numpy(), np.repeat(a[0, 0], 2, axis=0))


def test_boolean_any_all_einsum_pack():
    m = ember.tensor([[True, False], [True, True]])
    assert reduce(m, "i j -> i", "all").tolist() == [False, True]
    assert reduce(m, "i j -> j", "any").tolist() == [True, True]
    a, b = ember.randn(3, 4), ember.randn(4, 5)
    np.testing.assert_allclose(einsum(a, b, "i j, j k -> i k").numpy(), (a @ b).numpy(), rtol=1e-5, atol=1e-6)
    packed, ps = pack([a, b.t()], "* j")
    assert packed.shape == (8, 4)
    first, second = unpack(packed, ps, "* j")
    assert ember.equal(first, a) and ember.equal(second, b.t())


def test_gradients_flow_through_einops():
    x = ember.randn(2, 3, 4, requires_grad=True)
    reduce(rearrange(x, "b c d -> d (b c)"), "d n -> n", "mean").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 3, 4), 0.25, np.float32))


def test_integer_tensors_refuse_mean_as_in_pytorch():
    with pytest.raises(Exception, match="mean"):  # einops's own refusal for non-float types
        reduce(ember.arange(6).reshape(2, 3), "a b -> a", "mean")


@pytest.mark.parametrize("order", ["import einops\nimport ember\n", "import ember\nimport einops\n",
                                   "import ember\nfrom einops import rearrange\n"])
def test_either_import_order_works_without_importing_the_backend(order):
    code = order + textwrap.dedent("""
        import sys
        from einops import rearrange
        print(rearrange(ember.ones(2, 3), 'a b -> b a').shape, 'ember.utils.einops_backend' in sys.modules)
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ember.Size([3, 2]) True"


def test_a_process_without_einops_pays_nothing():
    r = subprocess.run([sys.executable, "-c", "import sys, ember; ember.ones(1).sum(); "
                        "print('einops' in sys.modules, 'ember.utils.einops_backend' in sys.modules)"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False False"
