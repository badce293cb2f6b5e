"""ember.profiler's schedule against torch.profiler's: the action of every step, and the
trace-ready calls a scheduled profile makes, for a spread of schedules."""
import itertools
import warnings

import pytest
import torch
import torch.profiler as TP

import ember
import ember.profiler as EP

SCHEDULES = [dict(wait=w, warmup=u, active=a, repeat=r, skip_first=s, skip_first_wait=sw)
             for w, u, a, r, s, sw in itertools.product((0, 2), (0, 1), (1, 3), (0, 2), (0, 3), (0, 1))]


@pytest.mark.parametrize("kw", SCHEDULES, ids=lambda k: "-".join(f"{v}" for v in k.values()))
def test_schedule_step_actions_match_torch(kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mine, theirs = EP.schedule(**kw), TP.schedule(**kw)
    assert [mine(i).name for i in range(40)] == [theirs(i).name for i in range(40)]


def _ready_steps(mod, lib, kw):
    seen = []
    x = lib.ones(2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with mod.profile(activities=[mod.ProfilerActivity.CPU], schedule=mod.schedule(**kw),
                         on_trace_ready=lambda p: seen.append(p.step_num)) as prof:
            for _ in range(12):
                x + x
                prof.step()
    return seen


@pytest.mark.parametrize("kw", [dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1),
                                dict(wait=0, warmup=0, active=1, repeat=3),
                                dict(wait=2, warmup=1, active=3)])
def test_on_trace_ready_fires_at_torchs_steps(kw):
    assert _ready_steps(EP, ember, kw) == _ready_steps(TP, torch, kw)
