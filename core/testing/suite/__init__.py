"""ember's conformance suite, ordered by tier: runtime, views, primitives, composites, autograd,
nn, optim, serialization, devices. Run it with
``pytest --pyargs ember.testing.suite --ember-backend NAME``."""
