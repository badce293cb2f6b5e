"""Learning-rate schedulers against their closed forms, PyTorch's calling-order warnings, the
state-dict layout and round trips, and the constructors' errors."""
import math
import pickle
import warnings

import pytest

import ember
from ember.optim import SGD, Adagrad, Adam
from ember.optim import lr_scheduler as S

BASE = (0.1, 0.02)


def make_opt(cls=SGD, **kw):
    a = ember.tensor([1.0], requires_grad=True)
    b = ember.tensor([1.0], requires_grad=True)
    kw.setdefault("momentum", 0.9) if cls is SGD else None
    return cls([{"params": [a]}, {"params": [b], "lr": BASE[1]}], lr=BASE[0], **kw)


def run(sched_fn, epochs, cls=SGD, **kw):
    """The lr of each group at epochs 0..epochs-1, stepping in the documented order."""
    opt = make_opt(cls, **kw)
    sched = sched_fn(opt)
    seen = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")       # the right calling order warns about nothing
        for _ in range(epochs):
            seen.append([g["lr"] for g in opt.param_groups])
            assert sched.get_last_lr() == seen[-1]
            opt.step()
            sched.step()
    return seen, opt, sched


def check(seen, closed):
    for e, lrs in enumerate(seen):
        for g, lr in enumerate(lrs):
            assert lr == pytest.approx(closed(BASE[g], e), rel=1e-9, abs=1e-15), f"epoch {e}, group {g}"


CLOSED_FORMS = {
    "LambdaLR": (lambda o: S.LambdaLR(o, lambda e: 1 / (1 + e)), lambda b, e: b / (1 + e)),
    "LambdaLR-per-group": (lambda o: S.LambdaLR(o, [lambda e: 0.5 ** e, lambda e: 0.5 ** e]),
                           lambda b, e: b * 0.5 ** e),
    "MultiplicativeLR": (lambda o: S.MultiplicativeLR(o, lambda e: 0.9 if e % 2 else 0.5),
                         lambda b, e: b * math.prod(0.9 if k % 2 else 0.5 for k in range(1, e + 1))),
    "StepLR": (lambda o: S.StepLR(o, step_size=3, gamma=0.5), lambda b, e: b * 0.5 ** (e // 3)),
    "MultiStepLR": (lambda o: S.MultiStepLR(o, milestones=[2, 5, 5, 9], gamma=0.1),
                    lambda b, e: b * 0.1 ** sum(m <= e for m in [2, 5, 5, 9])),
    "ConstantLR": (lambda o: S.ConstantLR(o, factor=0.25, total_iters=4), lambda b, e: b * (0.25 if e < 4 else 1.0)),
    "LinearLR": (lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=6),
                 lambda b, e: b * (0.2 + 0.7 * min(e, 6) / 6)),
    "ExponentialLR": (lambda o: S.ExponentialLR(o, gamma=0.8), lambda b, e: b * 0.8 ** e),
    "PolynomialLR": (lambda o: S.PolynomialLR(o, total_iters=8, power=2.0), lambda b, e: b * (1 - min(e, 8) / 8) ** 2),
    "CosineAnnealingLR": (lambda o: S.CosineAnnealingLR(o, T_max=7, eta_min=0.001),
                          lambda b, e: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * e / 7)) / 2),
    "CosineAnnealingWarmRestarts": (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=4, eta_min=0.001),
                                    lambda b, e: 0.001 + (b - 0.001) * (1 + math.cos(math.pi * (e % 4) / 4)) / 2),
    "SequentialLR": (lambda o: S.SequentialLR(o, [S.LinearLR(o, start_factor=0.5, total_iters=4),
                                                  S.ExponentialLR(o, gamma=0.9)], milestones=[4]),
                     lambda b, e: b * (0.5 + 0.5 * e / 4) if e < 4 else b * 0.9 ** (e - 4)),
    "ChainedScheduler": (lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.1, total_iters=3),
                                                       S.ExponentialLR(o, gamma=0.9)]),
                         lambda b, e: b * 0.9 ** e * (0.1 if e < 3 else 1.0)),
}


@pytest.mark.parametrize("name", list(CLOSED_FORMS))
def test_schedule_matches_closed_form(name):
    make, closed = CLOSED_FORMS[name]
    seen, _, _ = run(make, 25)
    check(seen, closed)


def test_warm_restarts_with_growing_periods():
    def closed(b, e):
        t_i, t = 3, e
        while t >= t_i:
            t, t_i = t - t_i, t_i * 2
        return (b / 2) * (1 + math.cos(math.pi * t / t_i))
    seen, _, _ = run(lambda o: S.CosineAnnealingWarmRestarts(o, T_0=3, T_mult=2), 30)
    check(seen, closed)


def test_warm_restarts_fractional_epochs():
    opt = make_opt()
    sched = S.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=2)
    for epoch, want_t, want_ti in [(0.5, 0.5, 2), (1.75, 1.75, 2), (2.5, 0.5, 4), (6.0, 0.0, 8), (7.0, 1.0, 8)]:
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched.step(epoch)
        assert (sched.T_cur, sched.T_i) == (pytest.approx(want_t), want_ti)
        assert opt.param_groups[0]["lr"] == pytest.approx(0.05 * (1 + math.cos(math.pi * want_t / want_ti)))
    with pytest.raises(ValueError, match="Expected non-negative epoch"):
        sched.step(-1)


def _triangle(e, step):
    cycle = math.floor(1 + e / (2 * step))
    x = abs(e / step - 2 * cycle + 1)
    return cycle, max(0.0, 1 - x)


@pytest.mark.parametrize("mode", ["triangular", "triangular2", "exp_range"])
def test_cyclic_lr_and_momentum(mode):
    seen, opt, _ = run(lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=[0.1, 0.05], step_size_up=4, mode=mode,
                                            gamma=0.95, base_momentum=0.8, max_momentum=0.9), 30)
    for e, lrs in enumerate(seen):
        cycle, h = _triangle(e, 4)
        scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1), "exp_range": 0.95 ** e}[mode]
        assert lrs[0] == pytest.approx(0.01 + 0.09 * h * scale)
        assert lrs[1] == pytest.approx(0.01 + 0.04 * h * scale)
    cycle, h = _triangle(30, 4)
    scale = {"triangular": 1.0, "triangular2": 1 / 2 ** (cycle - 1), "exp_range": 0.95 ** 30}[mode]
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.9 - 0.1 * h * scale)


def test_cyclic_lr_asymmetric_and_beta1_cycling():
    seen, opt, _ = run(lambda o: S.CyclicLR(o, base_lr=0.0, max_lr=1.0, step_size_up=2, step_size_down=6), 16, cls=Adam)
    want = [0, 0.5, 1, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6] * 2
    assert [lrs[0] for lrs in seen] == pytest.approx(want)
    assert opt.param_groups[0]["betas"][0] == pytest.approx(0.9) and opt.param_groups[0]["betas"][1] == 0.999


def _one_cycle(e, total, max_lr, pct=0.3, div=25.0, final=1e4, linear=False):
    def anneal(a, b, t):
        return a + (b - a) * t if linear else b + (a - b) / 2 * (math.cos(math.pi * t) + 1)
    init = max_lr / div
    up_end = pct * total - 1
    if e <= up_end:
        return anneal(init, max_lr, e / up_end)
    return anneal(max_lr, init / final, (e - up_end) / (total - 1 - up_end))


@pytest.mark.parametrize("linear", [False, True])
def test_one_cycle(linear):
    total = 20
    seen, opt, sched = run(lambda o: S.OneCycleLR(o, max_lr=[1.0, 0.5], total_steps=total,
                                                  anneal_strategy="linear" if linear else "cos"), total)
    for e, lrs in enumerate(seen):
        assert lrs[0] == pytest.approx(_one_cycle(e, total, 1.0, linear=linear))
        assert lrs[1] == pytest.approx(_one_cycle(e, total, 0.5, linear=linear))
    assert seen[-1][0] == pytest.approx(1.0 / 25 / 1e4)
    with pytest.raises(ValueError, match="Tried to step 21 times. The specified number of total steps is 20"):
        sched.step()


def test_one_cycle_three_phase_and_epochs():
    seen, opt, _ = run(lambda o: S.OneCycleLR(o, max_lr=1.0, epochs=2, steps_per_epoch=10, three_phase=True,
                                              anneal_strategy="linear"), 20)
    lr = [s[0] for s in seen]
    assert lr[0] == pytest.approx(0.04) and lr[5] == pytest.approx(1.0) and lr[10] == pytest.approx(0.04)
    assert lr[19] == pytest.approx(0.04 / 1e4)
    assert opt.param_groups[0]["momentum"] == pytest.approx(0.95)


def test_reduce_lr_on_plateau():
    opt = make_opt()
    sched = S.ReduceLROnPlateau(opt, factor=0.5, patience=2, cooldown=1, min_lr=[0.02, 0.015])
    metrics = [1.0, 0.9, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.95, 0.5]
    got = []
    for m in metrics:
        opt.step()
        sched.step(m)
        got.append(sched.get_last_lr())
    # bad epochs: 0.95 x3 -> reduce (epoch 5); cooldown 1 epoch; 3 more bad -> reduce (epoch 10)...
    assert [g[0] for g in got] == pytest.approx([0.1, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.05, 0.025, 0.025, 0.025])
    assert [g[1] for g in got] == pytest.approx([0.02, 0.02, 0.02, 0.02, 0.015, 0.015, 0.015, 0.015, 0.015, 0.015,
                                                 0.015])
    assert sched.best == 0.5 and sched.num_bad_epochs == 0


@pytest.mark.parametrize("mode,mode_t,seq,reduced_at", [
    ("max", "rel", [1.0, 1.05, 1.0001, 1.0001], 3),      # 1.0001 is not 1e-4 better than 1.05
    ("min", "abs", [1.0, 0.97, 0.96, 0.9], 2),            # improvements under threshold=0.05 do not count
])
def test_plateau_modes(mode, mode_t, seq, reduced_at):
    opt = make_opt()
    sched = S.ReduceLROnPlateau(opt, mode=mode, threshold_mode=mode_t, threshold=0.05 if mode_t == "abs" else 1e-4,
                                patience=1, factor=0.1)
    lrs = []
    for m in seq:
        sched.step(m)
        lrs.append(opt.param_groups[0]["lr"])
    assert lrs.index(pytest.approx(0.01)) == reduced_at


# -- calling order and other warnings -------------------------------------------------------

def test_scheduler_step_before_optimizer_step_warns():
    opt = make_opt()
    sched = S.StepLR(opt, step_size=1)
    with pytest.warns(UserWarning, match=r"Detected call of `lr_scheduler.step\(\)` before `optimizer.step\(\)`"):
        sched.step()


def test_overridden_optimizer_step_warns():
    opt = make_opt()
    sched = S.StepLR(opt, step_size=1)
    opt.step = lambda closure=None: None
    with pytest.warns(UserWarning, match=r"has been overridden after learning rate scheduler initialization"):
        sched.step()


def test_epoch_argument_is_deprecated_and_uses_the_closed_form():
    opt = make_opt()
    sched = S.StepLR(opt, step_size=2, gamma=0.5)
    opt.step()
    with pytest.warns(UserWarning, match="The epoch parameter in `scheduler.step\\(\\)` was not necessary"):
        sched.step(7)
    assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** 3) and sched.last_epoch == 7


def test_get_lr_outside_step_warns():
    sched = S.ExponentialLR(make_opt(), gamma=0.5)
    with pytest.warns(UserWarning, match=r"please use `get_last_lr\(\)`"):
        sched.get_lr()


def test_two_schedulers_compose_by_chaining():
    opt = make_opt()
    a, b = S.StepLR(opt, step_size=2, gamma=0.5), S.ExponentialLR(opt, gamma=0.9)
    for e in range(1, 7):
        opt.step()
        a.step()
        b.step()
        assert opt.param_groups[0]["lr"] == pytest.approx(0.1 * 0.5 ** (e // 2) * 0.9 ** e)


# -- state dicts ----------------------------------------------------------------------------------

STATE_KEYS = {  # PyTorch's scheduler state-dict keys
    "StepLR": ({"step_size", "gamma"}, lambda o: S.StepLR(o, 3)),
    "MultiStepLR": ({"milestones", "gamma"}, lambda o: S.MultiStepLR(o, [2, 4])),
    "ConstantLR": ({"factor", "total_iters"}, lambda o: S.ConstantLR(o)),
    "LinearLR": ({"start_factor", "end_factor", "total_iters"}, lambda o: S.LinearLR(o)),
    "ExponentialLR": ({"gamma"}, lambda o: S.ExponentialLR(o, 0.9)),
    "PolynomialLR": ({"total_iters", "power"}, lambda o: S.PolynomialLR(o)),
    "CosineAnnealingLR": ({"T_max", "eta_min"}, lambda o: S.CosineAnnealingLR(o, 10)),
    "CosineAnnealingWarmRestarts": ({"T_0", "T_i", "T_mult", "T_cur", "eta_min"},
                                    lambda o: S.CosineAnnealingWarmRestarts(o, 5)),
    "LambdaLR": ({"lr_lambdas"}, lambda o: S.LambdaLR(o, lambda e: 0.9 ** e)),
    "MultiplicativeLR": ({"lr_lambdas"}, lambda o: S.MultiplicativeLR(o, lambda e: 0.9)),
    "CyclicLR": ({"_scale_fn_custom", "base_momentums", "cycle_momentum", "gamma", "max_lrs", "max_momentums", "mode",
                  "scale_mode", "step_ratio", "total_size", "use_beta1"}, lambda o: S.CyclicLR(o, 0.01, 0.1)),
    "OneCycleLR": ({"_anneal_func_type", "_schedule_phases", "cycle_momentum", "total_steps", "use_beta1"},
                   lambda o: S.OneCycleLR(o, 0.1, total_steps=30)),
}
COMMON = {"_get_lr_called_within_step", "_is_initial", "_last_lr", "_step_count", "base_lrs", "last_epoch"}


@pytest.mark.parametrize("name", list(STATE_KEYS))
def test_state_dict_keys_are_pytorchs(name):
    keys, make = STATE_KEYS[name]
    opt = make_opt()
    sched = make(opt)
    opt.step()
    sched.step()
    assert set(sched.state_dict()) == COMMON | keys


@pytest.mark.parametrize("name", list(STATE_KEYS) + ["SequentialLR", "ChainedScheduler", "ReduceLROnPlateau"])
def test_state_dict_round_trip_resumes_identically(name):
    def build(opt):
        if name == "SequentialLR":
            return S.SequentialLR(opt, [S.LinearLR(opt, 0.5, total_iters=3), S.StepLR(opt, 2)], milestones=[3])
        if name == "ChainedScheduler":
            return S.ChainedScheduler([S.ConstantLR(opt, 0.5, 2), S.ExponentialLR(opt, 0.9)])
        if name == "ReduceLROnPlateau":
            return S.ReduceLROnPlateau(opt, patience=1, factor=0.5)
        return STATE_KEYS[name][1](opt)

    def step(opt, sched, e):
        opt.step()
        sched.step(1.0 + (e % 3 == 0)) if name == "ReduceLROnPlateau" else sched.step()

    o1 = make_opt()
    s1 = build(o1)
    for e in range(12):
        step(o1, s1, e)
    o2 = make_opt()
    s2 = build(o2)
    for e in range(5):
        step(o2, s2, e)
    sd, osd = pickle.dumps(s2.state_dict()), o2.state_dict()
    o3 = make_opt()
    s3 = build(o3)
    s3.load_state_dict(pickle.loads(sd))
    o3.load_state_dict(osd)
    for e in range(5, 12):
        step(o3, s3, e)
    assert [g["lr"] for g in o3.param_groups] == [g["lr"] for g in o1.param_groups]
    assert s3.get_last_lr() == s1.get_last_lr()


def test_lambda_objects_save_their_attributes():
    class Warmup:
        def __init__(self, n):
            self.n = n

        def __call__(self, e):
            return min(1.0, (e + 1) / self.n)
    opt = make_opt()
    sched = S.LambdaLR(opt, [Warmup(4), lambda e: 1.0])
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [{"n": 4}, None]
    other = S.LambdaLR(make_opt(), [Warmup(10), lambda e: 1.0])
    other.load_state_dict(sd)
    assert other.lr_lambdas[0].n == 4


def test_resuming_with_last_epoch_needs_initial_lr():
    opt = make_opt()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified in param_groups\\[0\\]"):
        S.StepLR(opt, 2, last_epoch=3)
    S.StepLR(opt, 2)                     # sets initial_lr
    sched = S.StepLR(opt, 2, gamma=0.5, last_epoch=3)
    assert sched.base_lrs == list(BASE) and sched.last_epoch == 4


def test_tensor_learning_rate_is_updated_in_place():
    lr = ember.tensor(0.1)
    a = ember.tensor([1.0], requires_grad=True)
    opt = SGD([a], lr=lr)
    sched = S.ExponentialLR(opt, gamma=0.5)
    opt.step()
    sched.step()
    assert opt.param_groups[0]["lr"] is lr and lr.item() == pytest.approx(0.05)


# -- bad input ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("make,exc,msg", [
    (lambda o: S.ConstantLR(o, factor=1.5), ValueError,
     "Constant multiplicative factor expected to be between 0 and 1"),
    (lambda o: S.LinearLR(o, start_factor=0), ValueError,
     "Starting multiplicative factor expected to be greater than 0"),
    (lambda o: S.LinearLR(o, end_factor=2), ValueError, "Ending multiplicative factor expected to be between 0 and 1"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=0), ValueError, "Expected positive integer T_0, but got 0"),
    (lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0), ValueError, "Expected integer T_mult >= 1"),
    (lambda o: S.OneCycleLR(o, 0.1), ValueError, "You must define either total_steps OR"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=0), ValueError, "Expected positive integer total_steps"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=10, pct_start=1.5), ValueError, "Expected float between 0 and 1"),
    (lambda o: S.OneCycleLR(o, 0.1, total_steps=10, anneal_strategy="exp"), ValueError, "anneal_strategy must be"),
    (lambda o: S.OneCycleLR(o, [0.1], total_steps=10), ValueError, "max_lr must have the same length"),
    (lambda o: S.CyclicLR(o, 0.01, 0.1, mode="square"), ValueError, "mode is invalid and scale_fn is None"),
    (lambda o: S.ReduceLROnPlateau(o, factor=1.0), ValueError, "Factor should be < 1.0."),
    (lambda o: S.ReduceLROnPlateau(o, mode="up"), ValueError, "mode up is unknown!"),
    (lambda o: S.ReduceLROnPlateau(o, threshold_mode="x"), ValueError, "threshold mode x is unknown!"),
    (lambda o: S.ReduceLROnPlateau(o, min_lr=[0.1]), ValueError, "expected 2 min_lrs, got 1"),
    (lambda o: S.LambdaLR(o, [lambda e: 1.0]), ValueError, "Expected 2 lr_lambdas, but got 1"),
    (lambda o: S.MultiplicativeLR(o, 0.5), TypeError, "lr_lambda should be a function, but got float"),
    (lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], milestones=[]), ValueError,
     "expects number of schedulers provided to be one more than the number of milestone points"),
    (lambda o: S.SequentialLR(o, [], milestones=[]), ValueError, "expects at least one scheduler"),
    (lambda o: S.SequentialLR(o, [S.ReduceLROnPlateau(o)], milestones=[]), ValueError,
     "does not support `ReduceLROnPlateau`"),
    (lambda o: S.ChainedScheduler([S.StepLR(o, 2), S.StepLR(make_opt(), 2)]), ValueError,
     "expects all schedulers to belong to the same optimizer"),
    (lambda o: S.StepLR(object(), 2), TypeError, "object is not an Optimizer"),
])
def test_constructor_errors(make, exc, msg):
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        make(make_opt())


def test_cycle_momentum_needs_momentum():
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.CyclicLR(make_opt(Adagrad), 0.01, 0.1)
    with pytest.raises(ValueError, match="optimizer must support momentum or beta1"):
        S.OneCycleLR(make_opt(Adagrad), 0.1, total_steps=10)
    S.CyclicLR(make_opt(Adagrad), 0.01, 0.1, cycle_momentum=False)
