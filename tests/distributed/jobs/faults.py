"""Rank 1 fails while rank 0 waits in a collective; the job must end at once with a non-zero
status. ``python faults.py MODE``: raise | exit | timeout (rank 1 is late, rank 0 gives up after
1 s)."""
import sys
import time
from datetime import timedelta

import ember
import ember.distributed as dist

mode = sys.argv[1]
dist.init_process_group(timeout=timedelta(seconds=1) if mode == "timeout" else None)
if dist.get_rank() == 1:
    if mode == "timeout":
        time.sleep(30)  # rank 0 gives up long before
    time.sleep(0.2)  # rank 0 is inside all_reduce by now
    if mode == "raise":
        raise ValueError("rank 1 failed on purpose")
    if mode == "exit":
        sys.exit(3)
t = ember.ones(2)
dist.all_reduce(t)  # rank 0 would wait here forever without the abort
print(f"rank {dist.get_rank()}: finished with {t.tolist()}", flush=True)
