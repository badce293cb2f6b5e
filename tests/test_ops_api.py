"""The op set of issue 3 is complete: every function, Tensor method, in-place variant and ``out=``
argument PyTorch documents for it exists in ember (behaviour is the conformance suite's job)."""
import inspect

import pytest

import ember

MATH = """add sub mul div true_divide floor_divide remainder fmod pow neg abs reciprocal exp exp2 expm1 log log2 log10
log1p sqrt rsqrt square sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh sigmoid logit erf erfc erfinv
floor ceil round trunc frac sign sgn clamp clip maximum minimum fmax fmin lerp hypot eq ne lt le gt ge isclose allclose
equal isnan isinf isfinite nan_to_num logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor
bitwise_not bitwise_left_shift bitwise_right_shift where copysign xlogy signbit heaviside logaddexp logaddexp2 sinc
float_power deg2rad rad2deg positive negative absolute subtract multiply divide greater less not_equal arcsin arccos
arctan arctan2 arcsinh arccosh arctanh fix isposinf isneginf addcmul addcdiv"""
REDUCTIONS = """sum mean nansum nanmean prod max min amax amin aminmax argmax argmin var std var_mean std_mean logsumexp
norm all any count_nonzero median nanmedian mode cumsum cumprod cummax cummin logcumsumexp"""
LINALG = """matmul mm bmm mv dot vdot inner outer ger addmm addmv addr baddbmm addbmm einsum tensordot kron trace diag
diagonal diag_embed diagflat cross matrix_power chain_matmul"""
SHAPE = """cat concat concatenate stack hstack vstack dstack column_stack split chunk tensor_split unbind hsplit vsplit
gather scatter scatter_add scatter_reduce index_select index_add index_copy index_fill index_put index_reduce take
take_along_dim put masked_fill masked_select masked_scatter nonzero argwhere sort argsort msort topk kthvalue unique
unique_consecutive flip fliplr flipud roll rot90 repeat_interleave tile tril triu tril_indices triu_indices meshgrid
broadcast_to broadcast_tensors broadcast_shapes movedim moveaxis swapaxes swapdims flatten unflatten ravel searchsorted
bucketize histc bincount from_dlpack to_dlpack"""
NOT_METHODS = {"cat", "concat", "concatenate", "stack", "hstack", "vstack", "dstack", "column_stack", "einsum",
               "tensordot", "meshgrid", "broadcast_tensors", "broadcast_shapes", "tril_indices", "triu_indices",
               "from_dlpack", "to_dlpack", "chain_matmul", "allclose", "equal", "where", "bucketize", "histc",
               "hsplit", "vsplit", "split", "logaddexp", "logaddexp2"}
ALL = (MATH + " " + REDUCTIONS + " " + LINALG + " " + SHAPE).split()


@pytest.mark.parametrize("name", ALL)
def test_function_exists(name):
    assert callable(getattr(ember, name, None)), f"ember.{name} is missing"
    assert getattr(ember, name).__doc__ or name in ("to_dlpack",), f"ember.{name} has no docstring"


@pytest.mark.parametrize("name", [n for n in ALL if n not in NOT_METHODS])
def test_tensor_method_exists(name):
    assert callable(getattr(ember.Tensor, name, None)), f"Tensor.{name} is missing"


INPLACE = """add_ sub_ mul_ div_ true_divide_ floor_divide_ remainder_ fmod_ pow_ neg_ abs_ reciprocal_ exp_ exp2_
expm1_ log_ log2_ log10_ log1p_ sqrt_ rsqrt_ square_ sin_ cos_ tan_ asin_ acos_ atan_ atan2_ sinh_ cosh_ tanh_ asinh_
acosh_ atanh_ sigmoid_ logit_ erf_ erfc_ erfinv_ floor_ ceil_ round_ trunc_ frac_ sign_ sgn_ clamp_ clip_ clamp_min_
clamp_max_ lerp_ hypot_ eq_ ne_ lt_ le_ gt_ ge_ nan_to_num_ logical_and_ logical_or_ logical_xor_ logical_not_
bitwise_and_ bitwise_or_ bitwise_xor_ bitwise_not_ bitwise_left_shift_ bitwise_right_shift_ copysign_ xlogy_ heaviside_
sinc_ float_power_ deg2rad_ rad2deg_ negative_ absolute_ subtract_ multiply_ divide_ greater_ less_ not_equal_ arcsin_
arccos_ arctan_ arctan2_ arcsinh_ arccosh_ arctanh_ fix_ addcmul_ addcdiv_ cumsum_ cumprod_ addmm_ addmv_ addr_ baddbmm_
addbmm_ scatter_ scatter_add_ scatter_reduce_ index_add_ index_copy_ index_fill_ index_put_ index_reduce_ put_
masked_fill_ masked_scatter_ tril_ triu_ t_ transpose_ swapaxes_ swapdims_ squeeze_ unsqueeze_ as_strided_ fill_ zero_
copy_ resize_ relu_""".split()


@pytest.mark.parametrize("name", INPLACE)
def test_inplace_method_exists(name):
    assert callable(getattr(ember.Tensor, name, None)), f"Tensor.{name} is missing"


# every function whose PyTorch signature has ``out=`` (checked against torch 2.13's docs)
OUT = """add sub mul div true_divide floor_divide remainder fmod pow neg abs reciprocal exp exp2 expm1 log log2 log10
log1p sqrt rsqrt square sin cos tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh sigmoid logit erf erfc erfinv
floor ceil round trunc frac sign sgn clamp clip maximum minimum fmax fmin lerp hypot eq ne lt le gt ge nan_to_num
logical_and logical_or logical_xor logical_not bitwise_and bitwise_or bitwise_xor bitwise_not where copysign xlogy
signbit heaviside logaddexp logaddexp2 sinc float_power deg2rad rad2deg addcmul addcdiv sum mean nansum nanmean prod max
min amax amin aminmax argmax argmin var std var_mean std_mean logsumexp norm all any median nanmedian mode cumsum
cumprod cummax cummin logcumsumexp matmul mm bmm mv dot outer ger addmm addmv addr baddbmm addbmm kron diag cross
chain_matmul inner tensordot cat concat concatenate stack hstack vstack dstack column_stack gather index_select
index_add index_copy index_reduce take take_along_dim masked_select nonzero sort msort topk kthvalue tril triu
searchsorted bucketize histc""".split()


@pytest.mark.parametrize("name", OUT)
def test_out_argument_exists(name):
    params = inspect.signature(getattr(ember, name)).parameters
    assert "out" in params, f"ember.{name} lacks out="


def test_named_tuple_types_are_exported():
    for name in ("max", "min", "sort", "topk", "kthvalue", "median", "nanmedian", "mode", "cummax", "cummin",
                 "aminmax"):
        assert hasattr(ember.return_types, name)
