"""Workload modules; each is imported by the runner and registers with @workload."""
