"""``ember.testing``: helpers for testing ops on any backend, and the conformance suite.

Run the suite against an installed backend::

    pytest --pyargs ember.testing.suite --ember-backend NAME

A plugin author tests an op on every installed backend in a few lines with :func:`check_op`::

    from ember.testing import check_op

    def test_my_op(device):          # the `device` fixture runs the test once per backend
        check_op(my_op, my_numpy_reference, [(3, 4)], device=device, grad=True)
"""
from __future__ import annotations

import numpy as np

from .helpers import (BackendCase, assert_close, backend_tolerance, check_grad, check_once, check_op, layouts,
                      make_tensor, reference_inputs, repro)
from .plugins import registered_plugin

__all__ = ["assert_close", "make_tensor", "check_op", "check_once", "check_grad", "layouts", "repro",
           "reference_inputs", "backend_tolerance", "BackendCase", "registered_plugin", "np"]
