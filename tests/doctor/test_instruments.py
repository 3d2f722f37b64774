"""Each of the probe's instruments (`trainlab.doctor.instruments`) on a few steps of a tiny model, in
milliseconds: what it measures, measured where it happens."""

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from trainlab.doctor.probe import Probe, StopTraining


def tiny(seed=0, relu=False, dtype=torch.float32):
    torch.manual_seed(seed)
    layers = [nn.Linear(8, 16), nn.ReLU() if relu else nn.Tanh(), nn.Linear(16, 4)]
    return nn.Sequential(*layers).to(dtype)


def batches(n, seed=1, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(32, 8, generator=g).to(dtype), torch.randint(0, 4, (32,), generator=g)) for _ in range(n)]


def train(model, data, optimizer=None, zero_grad=True, read=0, lr=0.1):
    optimizer = optimizer or torch.optim.SGD(model.parameters(), lr=lr)
    try:
        for x, y in data:
            if zero_grad:
                optimizer.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            for _ in range(read):
                loss.item()  # a host read (a device sync on a GPU)
    except StopTraining:
        pass
    return optimizer


def probed(model, data, **kwargs):
    probe_options = {k: kwargs.pop(k) for k in ("max_steps", "stop_after_nonfinite") if k in kwargs}
    with Probe(**{"max_steps": 100, **probe_options}) as probe:
        train(model, data, **kwargs)
    return probe, probe.summary()


def test_clock_counts_the_scripts_host_reads_per_step_and_not_the_probes_own():
    _, m = probed(tiny(), batches(6), read=3)
    assert m["host_reads_per_step"] == 3 and m["host_reads_max"] == 3
    assert len(m["time_split"]) == 4 and m["step_s"] > 0


def test_clock_counts_host_reads_per_forward_backward_pass_when_a_step_makes_several():
    """LBFGS evaluates its closure several times a step; a closure that reads its loss once reads once a pass."""
    model, data = tiny(), batches(4)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=5, tolerance_grad=0, tolerance_change=0)
    with Probe(max_steps=100) as probe:
        try:
            for x, y in data:

                def closure():
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(x), y)
                    loss.item()
                    loss.backward()
                    return loss

                optimizer.step(closure)
        except StopTraining:
            pass
    m = probe.summary()
    assert m["passes_per_step"] >= 5 and m["host_reads_per_step"] >= 5
    assert m["host_reads_per_pass"] == 1


def test_clock_times_the_models_own_pass_apart_from_forwards_no_backward_follows():
    model, data = tiny(), batches(20)  # the medians come from the steps after the 8 inspected ones
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Probe(max_steps=100) as probe:
        try:
            for x, y in data:
                optimizer.zero_grad()
                F.cross_entropy(model(x), y).backward()
                optimizer.step()
                with torch.no_grad():  # a metric over a bigger set every step: compute outside the pass
                    model(torch.randn(262144, 8))
        except StopTraining:
            pass
    m = probe.summary()
    # the metric's forward (262144 rows, about 30x the pass on 32 with its backward, so a busy machine's noise cannot
    # turn the order around) is most of the step, apart from the model's work
    assert m["extra_forward_s"] > m["model_s"] > 0 and m["extra_forward_s"] + m["model_s"] <= m["step_median_s"]
    assert m["other_models_s"] == 0 and m["compute_device"] == "cpu" and m["timed_steps"] == 12


def test_modes_are_read_on_every_trained_module_and_a_frozen_one_is_not_judged():
    """A GAN's generator left in eval() is found though the discriminator is the model; a teacher
    nothing updates, in eval() on purpose, is not judged."""
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 8))
    discriminator = nn.Sequential(nn.Linear(8, 16), nn.Dropout(0.2), nn.Linear(16, 1))
    teacher = nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1), nn.BatchNorm1d(8), nn.Identity()).eval()
    opt_g, opt_d = (torch.optim.Adam(m.parameters(), lr=1e-3) for m in (generator, discriminator))
    generator.eval()
    with Probe(max_steps=100) as probe:
        try:
            for _ in range(6):
                real = teacher(torch.randn(16, 8))
                opt_d.zero_grad()
                d_loss = (
                    F.softplus(-discriminator(real)).mean()
                    + F.softplus(discriminator(generator(torch.randn(16, 4)).detach())).mean()
                )
                d_loss.backward()
                opt_d.step()
                opt_g.zero_grad()
                F.softplus(-discriminator(generator(torch.randn(16, 4)))).mean().backward()
                opt_g.step()
        except StopTraining:
            pass
    modes = probe.summary()["modes"]
    assert modes["module"] == "Sequential" and modes["model_in_eval"] == modes["training_forwards"] >= 3
    # the generator's one BatchNorm, not the teacher's Dropout and BatchNorm (nothing updates the teacher)
    assert modes["mode_modules"] == 1 and modes["examples"] == ["1"]
    assert len(probe.modes.seen) == 3  # all three were seen; only the two trained ones judged


def test_the_model_that_ran_is_judged_when_the_optimizer_holds_a_discarded_models_parameters():
    """Issue 47: nc_4 re-creates its model after building the optimizer; the modes of the model that ran are read
    (not 'no result' for want of a trained module)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))  # "a clean start"
    with Probe(max_steps=100) as probe:
        try:
            for _ in range(6):
                optimizer.zero_grad()
                F.cross_entropy(model(torch.randn(16, 4)), torch.randint(0, 2, (16,))).backward()
                optimizer.step()
        except StopTraining:
            pass
    modes = probe.summary()["modes"]
    assert modes["training_forwards"] == 6 and modes["model_in_eval"] == 0 and modes["mode_modules"] == 1, modes


def test_gradients_cleared_between_backward_and_step_are_seen_per_optimizer():
    """The generator's zero_grad moved between its backward and its step; the discriminator trains."""
    torch.manual_seed(0)
    generator, discriminator = nn.Linear(4, 8), nn.Linear(8, 1)
    opt_g, opt_d = (torch.optim.SGD(m.parameters(), lr=1e-2) for m in (generator, discriminator))
    with Probe(max_steps=100) as probe:
        try:
            for _ in range(6):
                opt_d.zero_grad()
                F.softplus(discriminator(generator(torch.randn(16, 4)).detach())).mean().backward()
                opt_d.step()
                F.softplus(-discriminator(generator(torch.randn(16, 4)))).mean().backward()
                opt_g.zero_grad()  # the bug: cleared before the step
                opt_g.step()
        except StopTraining:
            pass
    cleared = {r["optimizer"]: r for r in probe.summary()["cleared_before_step"]}
    generator_record = cleared["optimizer 2 (SGD)"]
    assert (
        generator_record["steps_checked"] >= 3
        and generator_record["steps_without_grads"] == generator_record["steps_checked"]
    )
    assert cleared["optimizer 1 (SGD)"]["steps_without_grads"] == 0


def test_a_closures_forward_and_backward_are_counted_once_and_a_teachers_forward_as_another_modules():
    model, data, teacher = tiny(), batches(6), nn.Linear(8, 8)
    optimizer = torch.optim.LBFGS(model.parameters(), lr=0.5, max_iter=4, tolerance_grad=0, tolerance_change=0)
    with Probe(max_steps=100) as probe:
        try:
            for x, y in data:
                with torch.no_grad():
                    soft = teacher(x)

                def closure():
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(x + 0 * soft), y)
                    loss.backward()
                    return loss

                optimizer.step(closure)
        except StopTraining:
            pass
    clock = probe.clock
    # the model's work per step is not larger than the step: forwards and backwards inside step() counted once
    assert all(work <= step + 1e-6 for work, step in zip(clock.model_time, clock.step_times))
    assert probe.summary()["other_models_s"] > 0


def test_token_batches_are_told_apart_by_a_hash_of_the_whole_batch():
    emb = nn.Sequential(nn.Embedding(50, 8), nn.Flatten(), nn.Linear(8 * 12, 4))
    optimizer = torch.optim.SGD(emb.parameters(), lr=0.1)
    g = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, 50, (16, 8), generator=g)  # a shared prefix: the first tokens of every batch agree
    batches_ = [torch.cat([prompt, torch.randint(0, 50, (16, 4), generator=g)], 1) for _ in range(6)]
    for data, distinct in ((batches_, 6), ([batches_[0]] * 6, 1)):
        with Probe(max_steps=100) as probe:
            try:
                for x in data:
                    optimizer.zero_grad()
                    F.cross_entropy(emb(x), torch.zeros(16, dtype=torch.long)).backward()
                    optimizer.step()
            except StopTraining:
                pass
        m = probe.summary()
        assert m["batches_seen"] == 6 and m["distinct_batches"] == distinct


def test_never_negative_logits_with_zeros_are_a_relu_but_probabilities_are_not():
    for head, relu in ((nn.ReLU(), True), (nn.Softmax(dim=1), False)):
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4), head)
        with torch.no_grad():
            model[2].bias.copy_(torch.tensor([0.0, 0.0, 200.0, -200.0]))  # softmax rows underflow to exact zeros
        _, m = probed(model, batches(4))
        assert (m["loss_inputs"]["nonnegative_logits"] == 4) == relu, head


def test_losses_keep_every_backwards_loss_and_stop_a_run_that_stays_non_finite():
    probe, m = probed(tiny(), batches(5))
    assert len(m["losses"]) == 5 and m["finite"] and len(m["batch_acc"]) == 5
    nan_data = [(x * float("nan"), y) for x, y in batches(10)]
    probe, m = probed(tiny(), nan_data, stop_after_nonfinite=3)
    # the third non-finite loss ends the run: its own optimizer step does not run
    assert len(m["losses"]) == 3 and probe.steps == 2 and all(math.isnan(v) for v in m["losses"])


def test_losses_see_probabilities_handed_to_cross_entropy():
    model = nn.Sequential(tiny(), nn.Softmax(dim=1))
    _, m = probed(model, batches(3))
    assert m["probabilities_into_loss"] == 3


def test_captures_keep_the_model_its_first_state_and_the_batches_with_their_classes():
    model = tiny()
    first = {k: v.clone() for k, v in model.state_dict().items()}
    probe, m = probed(model, batches(4))
    assert probe.captured.root is model and len(probe.captured.batches) == 4 and len(probe.captured.targets) == 4
    torch.testing.assert_close(probe.captured.init_state, first)  # before any step changed them
    assert m["classes"] == 4 and 0.25 <= m["chance"] < 0.5 and m["batch_size"] == 32 and m["distinct_batches"] == 4


def test_gradients_find_stale_gradients_and_a_parameter_cut_from_the_graph():
    _, m = probed(tiny(), batches(4), zero_grad=False)
    assert m["stale_grads"] == [True, True, True]  # every step after the first starts with gradients left over
    _, m = probed(tiny(), batches(4))
    assert m["stale_grads"] == [False, False, False] and m["gradient_flow"]["no_gradient"] == []

    class Cut(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = nn.Linear(8, 16), nn.Linear(16, 4)

        def forward(self, x):
            return self.b(self.a(x).detach())  # a gets no gradient

    _, m = probed(Cut(), batches(3))
    assert m["gradient_flow"]["no_gradient_modules"] == ["a"]


def test_updates_record_learning_rates_update_sizes_and_parameters_no_optimizer_holds():
    model = tiny()
    optimizer = torch.optim.SGD(model[0].parameters(), lr=0.1)  # the last layer is never stepped
    with Probe(max_steps=100) as probe:
        train(model, batches(4), optimizer=optimizer)
    m = probe.summary()
    assert m["lr"] == [0.1] * 4 and m["optimizers"][0]["type"] == "SGD"
    assert m["params_not_optimized"] == 2 and m["params_optimized_unused"] == 0
    assert m["update_ratio_steps"] == 4 and 0 < m["update_ratio_median"] < 1


def test_formats_see_updates_that_round_away_in_bfloat16_weights():
    _, m = probed(tiny(dtype=torch.bfloat16), batches(4, dtype=torch.bfloat16), lr=1e-4)
    assert m["lost_update_shares"] and min(m["lost_update_shares"]) > 0.5  # most pushed weights kept their value
    _, m = probed(tiny(), batches(4), lr=1e-4)
    assert max(m["lost_update_shares"]) < 0.05


def test_forward_stats_see_dtypes_dead_units_and_the_first_module_to_make_nan():
    model = tiny(relu=True)
    with torch.no_grad():
        model[0].bias.fill_(-100.0)  # every unit below zero: dead
    _, m = probed(model, batches(3))
    assert m["dead_relu"] == [1.0] and m["output_dtypes"] == {"torch.float32": 12}  # 3 layers and the model, 3 steps

    class Blows(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x):
            return self.fc(x) / 0.0 * 0.0  # finite in, NaN out

    _, m = probed(Blows(), batches(2))
    assert m["first_nonfinite"]["module"] == "Blows" and m["first_nonfinite"]["step"] == 1


def test_loads_turn_compile_into_a_no_op_and_count_weight_loads():
    model = tiny()
    with Probe(max_steps=100) as probe:
        compiled = torch.compile(model)
        model.load_state_dict(tiny(seed=3).state_dict())
        train(compiled, batches(2))
    m = probe.summary()
    assert compiled is model and m["compile_calls"] == 1 and m["weight_loads"] == 1
    assert torch.compile is not None and probe.loads.loaded_params == {id(p) for p in model.parameters()}


@pytest.mark.parametrize("name", ["backward", "tolist", "cpu"])
def test_every_patch_is_restored(name):
    before = getattr(torch.Tensor, name)
    with Probe():
        assert getattr(torch.Tensor, name) is not before
    assert getattr(torch.Tensor, name) is before


def test_the_host_reads_dispatch_mode_lasts_exactly_the_run():
    from torch.utils._python_dispatch import _get_current_dispatch_mode

    with Probe():
        assert type(_get_current_dispatch_mode()).__name__ == "HostReads"
    assert _get_current_dispatch_mode() is None


def _kept_after(keep, leftovers=None):
    """graph_nodes_kept_after_step of a run whose script keeps keep(loss, logits) after every step."""
    model, kept = tiny(), []
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Probe(max_steps=8) as probe:
        try:
            for x, y in batches(9):
                logits = model(x)
                loss = F.cross_entropy(logits, y)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                if keep is not None:
                    kept.append(keep(loss, logits))
        except StopTraining:
            pass
    if leftovers is not None:
        leftovers += kept
    return probe.summary()["graph_nodes_kept_after_step"]


@pytest.mark.parametrize(
    "what, keep",
    [
        ("losses", lambda loss, logits: loss),
        ("outputs", lambda loss, logits: logits),
        ("copies of the loss", lambda loss, logits: loss.cpu()),
        ("a tensor computed from the loss", lambda loss, logits: loss * 2),
    ],
)
def test_graphs_are_counted_by_the_live_tensors_that_keep_them_whatever_they_are(what, keep):
    held = _kept_after(keep)
    assert held[0] == 0 and held[-1] >= 6 and held == sorted(held), held  # more with every step kept
    assert _kept_after(lambda loss, logits: loss.detach()) == [0] * 8


def test_another_runs_leftover_graphs_are_not_this_runs():
    leftovers = []
    _kept_after(lambda loss, logits: loss, leftovers)  # a run in the same process (the checks' child) kept 8 graphs
    assert leftovers and _kept_after(None) == [0] * 8


@pytest.mark.parametrize("remake, rewritten", [(True, True), (False, False)])
def test_masters_re_made_in_a_step_hook_are_seen_as_rewritten(remake, rewritten):
    model = tiny(dtype=torch.bfloat16)
    masters = [p.detach().float().requires_grad_() for p in model.parameters()]
    optimizer = torch.optim.SGD(masters, lr=1e-3)

    def before(opt, args, kwargs):  # the script's own step pre-hook: gradients in (and, wrongly, the weights)
        for m, p in zip(masters, model.parameters()):
            if remake:
                m.data.copy_(p.data)
            m.grad = p.grad.float()

    def after(opt, args, kwargs):
        with torch.no_grad():
            for m, p in zip(masters, model.parameters()):
                p.copy_(m)

    optimizer.register_step_pre_hook(before)
    optimizer.register_step_post_hook(after)
    _, m = probed(model, batches(8, dtype=torch.bfloat16), optimizer=optimizer, lr=None)
    assert (max(m["rewritten_shares"]) > 0.1) is rewritten, m["rewritten_shares"]
    assert optimizer._optimizer_step_pre_hooks.keys().__len__() == 1  # the probe's own hooks are gone


# ---------------------------------------------------------------- updates however they are made; the task
def _sgd_by_hand(model, data, lr=0.1, assign=False, update=True, zero=True):
    try:
        for x, y in data:
            loss = F.cross_entropy(model(x), y)
            if zero:
                model.zero_grad()
            loss.backward()
            for p in model.parameters():
                if not update:
                    continue
                if assign:
                    p.data = p.data - lr * p.grad  # a new tensor: no version counter moves
                else:
                    p.data.add_(p.grad, alpha=-lr)
    except StopTraining:
        pass


@pytest.mark.parametrize("assign", [False, True], ids=["data.add_", "data ="])
def test_updates_made_by_hand_are_found_by_value(assign):
    with Probe(max_steps=100) as probe:
        _sgd_by_hand(tiny(), batches(6), assign=assign)
    m = probe.summary()
    assert m["steps"] == 0 and m["updates_by_hand"] == m["iterations_compared"] == 5
    assert 1e-4 < m["update_ratio_median"] < 1 and set(m["update_ratios"]) == {"0.weight", "2.weight"}
    assert m["stale_grads_by_updater"] == {"by hand": [False] * 4}  # zeroed before every backward
    with Probe(max_steps=100) as probe:
        _sgd_by_hand(tiny(), batches(6), update=False)
    m = probe.summary()
    assert m["updates_by_hand"] == 0 and m["iterations_compared"] == 5
    with Probe(max_steps=100) as probe:
        _sgd_by_hand(tiny(), batches(6), zero=False)
    assert probe.summary()["stale_grads_by_updater"] == {"by hand": [True] * 4}


def test_a_closure_that_zeroes_inside_the_step_leaves_no_stale_gradients():
    model, data = tiny(), batches(5)
    optimizer = torch.optim.LBFGS(model.parameters(), max_iter=3)
    with Probe(max_steps=100) as probe:
        try:
            for x, y in data:

                def closure():
                    optimizer.zero_grad()
                    loss = F.cross_entropy(model(x), y)
                    loss.backward()
                    return loss

                optimizer.step(closure)
        except StopTraining:
            pass
    m = probe.summary()
    assert m["steps"] == 5 and m["stale_grads"] == [False] * 4


def test_a_gan_is_recognised_and_each_optimizer_judged_on_its_own_gradients():
    torch.manual_seed(0)
    g, d = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 8)), nn.Sequential(nn.Linear(8, 1), nn.Sigmoid())
    opt_g, opt_d = torch.optim.Adam(g.parameters(), 1e-3), torch.optim.Adam(d.parameters(), 1e-3)
    with Probe(max_steps=100) as probe:
        try:
            for _ in range(6):
                real, fake = torch.randn(16, 8), g(torch.randn(16, 4))
                d.zero_grad()
                loss_d = F.binary_cross_entropy(d(real), torch.ones(16, 1)) + F.binary_cross_entropy(
                    d(fake.detach()), torch.zeros(16, 1)
                )
                loss_d.backward()
                opt_d.step()
                g.zero_grad()  # the generator's loss also fills the discriminator's .grad: cleared at its next step
                F.binary_cross_entropy(d(fake), torch.ones(16, 1)).backward()
                opt_g.step()
        except StopTraining:
            pass
    m = probe.summary()
    assert m["task"]["kind"] == "adversarial" and m["task"]["optimizer_steps"] == [6, 6]
    assert m["classes"] is None and m["chance"] is None
    assert not any(m["stale_grads"]) and len(m["stale_grads_by_updater"]) == 2


def test_the_task_fits_the_loss_and_the_inputs():
    def run(model, step):
        with Probe(max_steps=100) as probe:
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
            try:
                for i in range(4):
                    optimizer.zero_grad()
                    step(model, i).backward()
                    optimizer.step()
            except StopTraining:
                pass
        return probe.summary()

    x, y = batches(1)[0]
    m = run(tiny(), lambda model, i: F.cross_entropy(model(x), y))
    assert m["task"]["kind"] == "classification" and m["classes"] == 4 and m["chance"] is not None
    m = run(tiny(), lambda model, i: F.mse_loss(model(x), torch.zeros(32, 4)))
    assert m["task"]["kind"] == "regression" and m["classes"] is None and m["chance"] is None
    tokens = torch.randint(0, 200, (8, 12))
    lm = nn.Sequential(nn.Embedding(200, 16), nn.Linear(16, 200))
    m = run(lm, lambda model, i: F.cross_entropy(model(tokens).flatten(0, 1), tokens.roll(-1, 1).flatten()))
    assert m["task"]["kind"] == "language-model" and m["task"]["vocabulary"] == 200 and m["chance"] is None
    assert 0 < m["task"]["unigram_loss"] <= math.log(200)


def test_a_validation_pass_before_training_lends_no_targets_to_the_training_batches():
    model, data = tiny(), batches(5)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    with Probe(max_steps=100) as probe:
        with torch.no_grad():  # a sanity check of the validation loop, as Lightning runs one first
            F.cross_entropy(model(torch.randn(64, 8)), torch.zeros(64, dtype=torch.long))
        train(model, data, optimizer)
    assert [len(t) for t in probe.captured.targets] == [32] * 5


def test_dropout_is_read_from_training_calls_and_the_scripts_arguments_pass_through_untouched():
    """Issue 46's regularisation rule reads p from F.dropout* calls: only those that train, and without changing
    what the script asked for (alpha_dropout's training defaults to False, dropout's to True)."""
    from trainlab.doctor.probe import Probe

    layer, x = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Dropout(0.3)), torch.ones(3, 4)
    with Probe(max_steps=3) as probe:
        assert torch.equal(F.alpha_dropout(x, 0.9), x)  # not training by default: untouched and not counted
        F.dropout(x, p=0.7, training=False)
        layer(x).sum().backward()
        F.dropout2d(torch.ones(2, 3, 4, 4), 0.2, True, False)
    assert probe.summary()["dropout_max"] == 0.3
