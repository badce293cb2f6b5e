"""The conformance suite's nn tier under ``EMBER_TEST_COMPILE`` (``ember.testing.compile_check``):
a slice of it runs here, in the normal test run, with every ``check_once`` and every outermost
module call compared against its ``ember.compile`` replay; the whole tier runs with
``EMBER_TEST_COMPILE=1 pytest --pyargs ember.testing.suite -k "06"``. The checker itself must
catch a replay that differs from eager."""
import numpy as np
import pytest

import ember
from ember.testing import compile_check as CC
from ember.testing.suite import test_06_nn as NN
from ember.testing.suite import test_06b_nn_sequence as SEQ

CPU = ember.device("cpu")

CASES = {
    "linear": lambda d: NN.test_linear(d),
    "conv2d": lambda d: NN.test_conv2d(d, dict(stride=2, padding=1)),
    "max_pool2d": lambda d: NN.test_max_pool2d(d, dict(kernel_size=2)),
    "batch_norm": NN.test_batch_norm_train_and_eval,
    "norms": NN.test_layer_group_instance_rms_norm,
    "cross_entropy": lambda d: NN.test_cross_entropy_and_nll(d, "mean"),
    "embedding": NN.test_embedding_and_bag,
    "dropout": NN.test_dropout_statistics_and_eval,
    "modules": NN.test_prelu_and_modules_match_functional,
    "small_cnn": NN.test_small_cnn_trains,
    "rnn_batch_first": SEQ.test_rnn_batch_first_unbatched_and_default_state,
    "mha": lambda d: SEQ.test_multihead_attention_vs_numpy(d, True),
    "transformer_layer": SEQ.test_transformer_encoder_layer_vs_numpy,
    "transformer_dropout": SEQ.test_transformer_train_eval_dropout,
}


@pytest.fixture
def compiled_checks(monkeypatch):
    monkeypatch.setenv(CC.ENV, "1")
    CC.reset_stats()
    with CC.module_calls_checked():
        yield CC.stats
    CC.reset_stats()


@pytest.mark.parametrize("name", sorted(CASES))
def test_nn_tier_case_under_compile(name, compiled_checks):
    CASES[name](CPU)
    assert compiled_checks["compared"] > 0
    assert compiled_checks["replayed"] > 0, CC.summary()


def test_checker_catches_a_replay_that_differs_from_eager(monkeypatch):
    monkeypatch.setenv(CC.ENV, "1")
    calls = []

    def f(x):
        calls.append(1)
        return x * float(len(calls))  # a python value the capture bakes in: the replay repeats it

    x = ember.randn(3, dtype=ember.float64)
    expected = f(x)
    with pytest.raises(AssertionError, match="compiled differs from eager"):
        CC.check_call(f, (x,), {}, expected)


def test_checker_restores_generators_and_buffers(monkeypatch):
    monkeypatch.setenv(CC.ENV, "1")
    m = ember.nn.Sequential(ember.nn.BatchNorm1d(3), ember.nn.Dropout(0.5)).train()
    x = ember.randn(4, 3)
    ember.manual_seed(1)
    with CC.module_calls_checked():
        y = m(x)
        after = m[0].running_mean.clone()
        z = ember.rand(2)
    ember.manual_seed(1)
    m2 = ember.nn.Sequential(ember.nn.BatchNorm1d(3), ember.nn.Dropout(0.5)).train()
    np.testing.assert_array_equal(m2(x).detach().numpy(), y.detach().numpy())
    np.testing.assert_array_equal(m2[0].running_mean.numpy(), after.numpy())
    np.testing.assert_array_equal(ember.rand(2).numpy(), z.numpy())
    assert int(m[0].num_batches_tracked) == 1
