"""ember's benchmarks: each workload timed in ember, in hand-written numpy and, when installed,
in PyTorch, in the same run (``python -m benchmarks``)."""
