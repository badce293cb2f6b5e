"""Named tuples returned by ops with several results (``values``/``indices`` and friends)."""
from collections import namedtuple

max = namedtuple("max", ["values", "indices"])
min = namedtuple("min", ["values", "indices"])
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
kthvalue = namedtuple("kthvalue", ["values", "indices"])
median = namedtuple("median", ["values", "indices"])
nanmedian = namedtuple("nanmedian", ["values", "indices"])
mode = namedtuple("mode", ["values", "indices"])
cummax = namedtuple("cummax", ["values", "indices"])
cummin = namedtuple("cummin", ["values", "indices"])
aminmax = namedtuple("aminmax", ["min", "max"])
frexp = namedtuple("frexp", ["mantissa", "exponent"])
histogram = namedtuple("histogram", ["hist", "bin_edges"])
histogramdd = namedtuple("histogramdd", ["hist", "bin_edges"])
