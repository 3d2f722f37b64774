"""Module 04: the kernels agree with float64 references; the validation harness catches wrong
kernels; the timing harness catches a timing that does not wait; the labs' checks tell the
broken versions from the fixed ones. Triton runs in its interpreter here (no GPU)."""

import re
import runpy
import time

import pytest
import torch

from benchmarks import timing_verdicts
from tests import matrix
from trainlab import checks
from trainlab.workbook import labs
from trainlab.measurement import timing
from trainlab.kernels import adamw, chain, cross_entropy, labcheck, specs, triton_env, validate


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(specs.SPECS))
def test_every_kernel_passes_the_harness(name, device):
    # Triton on the device under test (compiled on CUDA, interpreted on CPU); C++ is the CPU rung
    report = validate.validate(specs.SPECS[name], device="cpu" if name.endswith("/cpp") else device)
    assert report.passed, report.summary()
    kinds = {r.check for r in report.results}
    assert {"values", "NaN/Inf"} <= kinds
    if not name.startswith("adamw"):  # the multi-tensor update takes lists: no strided view, no autograd
        assert {"strided input", "gradcheck"} <= kinds


def test_triton_runs_in_the_interpreter_without_a_gpu():
    assert not torch.cuda.is_available()  # `make test` hides GPUs
    assert triton_env.AVAILABLE and triton_env.INTERPRET


def _chain_spec(run, **kw):
    return validate.Spec("wrong", specs.chain_inputs, run, chain.reference, specs.CHAIN_SHAPES, **kw)


def test_harness_fails_a_slightly_wrong_kernel():
    report = validate.validate(_chain_spec(lambda *a: chain.triton_forward(*a) * (1 + 1e-4)), gradients=False)
    assert not report.passed
    assert "tolerance" in report.failures[0].detail and report.failures[0].error_ratio > 1


def test_harness_finds_elements_a_kernel_never_writes():
    def skips_last_column(x, b, s, t):
        y = torch.empty_like(x)  # poisoned (NaN) while the harness runs
        y[:, :-1] = chain.reference(x, b, s, t)[:, :-1]
        return y

    report = validate.validate(_chain_spec(skips_last_column), gradients=False, specials=False)
    assert not report.passed
    assert all("with nothing poisoned they are numbers" in r.detail for r in report.failures), report.failures[0]


def test_harness_tells_nan_from_the_kernels_arithmetic_from_nan_from_poisoned_memory():
    """Issue 47, item 4: NaN the kernel computes (0/0, as a masked lane filled with 0 makes) stays NaN in an
    unpoisoned rerun, and the verdict says so instead of blaming unwritten memory."""

    def divides_zero_by_zero(x, b, s, t):
        y = chain.reference(x, b, s, t).clone()
        y[:, -1] = (y[:, -1] * 0) / (y[:, -1] * 0)
        return y

    report = validate.validate(_chain_spec(divides_zero_by_zero), gradients=False, specials=False)
    assert report.failures and all("the kernel's own arithmetic" in r.detail for r in report.failures), report.failures


def test_a_softmax_whose_masked_lanes_make_0_over_0_is_named_as_arithmetic(tmp_path):
    """The walk's case: masked lanes filled with 0 and left out of the sum - a row of values near -1e30 then takes its
    max (0) from the masked lanes, every exp underflows, and the kernel divides 0 by 0."""
    script = tmp_path / "zero_sum.py"
    source = labs.source("kernels/softmax_mask").replace("e = tl.exp(x)", "e = tl.where(mask, tl.exp(x), 0.0)")
    script.write_text(source)
    verdict = labcheck.judge("kernels/softmax_mask", runpy.run_path(str(script), run_name="trainlab_check"))
    nan_rows = [
        r for r in verdict["rows"] if r["result"] == "FAIL" and "NaN where the reference is finite" in r["detail"]
    ]
    assert nan_rows and all("the kernel's own arithmetic" in r["detail"] for r in nan_rows), verdict["rows"]


def test_harness_catches_a_kernel_that_assumes_contiguous_rows():
    def assumes_contiguous(x, b, s, t):
        flat = torch.as_strided(x, x.shape, (x.shape[1], 1))  # reads rows as if they were packed
        return chain.reference(flat, b, s, t)

    report = validate.validate(_chain_spec(assumes_contiguous), gradients=False, specials=False)
    assert [r.check for r in report.failures] == ["strided input", "transposed input"]


def test_harness_catches_a_kernel_that_assumes_unit_column_stride():
    def assumes_unit_columns(x, b, s, t):
        flat = torch.as_strided(x, x.shape, (x.stride(0), 1))  # right rows, columns assumed adjacent
        return chain.reference(flat, b, s, t)

    report = validate.validate(_chain_spec(assumes_unit_columns), gradients=False, specials=False)
    assert [r.check for r in report.failures] == ["transposed input"]


def test_harness_catches_a_kernel_that_swallows_nan():
    report = validate.validate(_chain_spec(lambda *a: torch.nan_to_num(chain.triton_forward(*a))), gradients=False)
    assert {r.check for r in report.failures} == {"NaN/Inf"}


def test_gradcheck_catches_a_wrong_backward():
    class MissingGeluDerivative(chain.FusedChain):
        @staticmethod
        def backward(ctx, grad):
            x, bias, scale, shift = ctx.saved_tensors
            dx = grad * scale  # forgot gelu'(u)
            return dx, dx.sum(0), (grad * (x + bias)).sum(0), grad.sum(0), None

    spec = _chain_spec(
        chain.triton_forward,
        gradcheck=lambda shape: (
            lambda *a: MissingGeluDerivative.apply(*a, "triton"),
            [a.requires_grad_() for a in specs.chain_inputs(shape, torch.float64, torch.Generator().manual_seed(0))],
        ),
    )
    report = validate.validate(spec, specials=False)
    assert [r.check for r in report.failures] == ["gradcheck"]


def test_harness_reports_a_kernel_that_raises():
    def raises(*args):
        raise IndexError("pointer out of bounds")

    report = validate.validate(_chain_spec(raises), gradients=False)
    assert not report.passed and "IndexError: pointer out of bounds" in report.failures[0].detail


def test_fused_adamw_trains_like_torch_adamw():
    torch.manual_seed(0)
    make = lambda: torch.nn.Sequential(torch.nn.Linear(33, 65), torch.nn.GELU(), torch.nn.Linear(65, 10))  # noqa: E731
    models = [make() for _ in range(3)]
    for m in models[1:]:
        m.load_state_dict(models[0].state_dict())
    opts = [
        torch.optim.AdamW(models[0].parameters(), lr=1e-2, weight_decay=0.1, foreach=False),
        adamw.FusedAdamW(models[1].parameters(), lr=1e-2, weight_decay=0.1, impl="triton"),
        adamw.FusedAdamW(models[2].parameters(), lr=1e-2, weight_decay=0.1, impl="cpp"),
    ]
    x, y = torch.randn(64, 33), torch.randint(0, 10, (64,))
    for _ in range(5):
        for model, opt in zip(models, opts):
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
    for model in models[1:]:
        for p, q in zip(model.parameters(), models[0].parameters()):
            torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("impl", ["triton", "cpp"])
def test_fused_chain_and_cross_entropy_train_like_eager(impl):
    torch.manual_seed(0)
    x = torch.randn(32, 48, requires_grad=True)
    params = [torch.randn(48, requires_grad=True) for _ in range(3)]
    target = torch.randint(0, 48, (32,))
    fused = cross_entropy.fused_cross_entropy(chain.fused_chain(x, *params, impl=impl), target, impl=impl)
    grads = torch.autograd.grad(fused, [x, *params])
    eager = torch.nn.functional.cross_entropy(chain.reference(x, *params), target)
    torch.testing.assert_close(fused, eager)
    for got, want in zip(grads, torch.autograd.grad(eager, [x, *params])):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-6)


def test_bad_inputs_get_clear_errors():
    with pytest.raises(ValueError, match=r"targets must lie in \[0, 10\)"):
        cross_entropy.fused_cross_entropy(torch.randn(4, 10), torch.tensor([0, 1, 2, 10]))
    with pytest.raises(ValueError, match="impl='cuda'"):
        chain.fused_chain(torch.randn(2, 3), *torch.randn(3, 3), impl="cuda")
    with pytest.raises(TypeError, match="contiguous float32"):
        adamw.cpp_step(
            [torch.zeros(3, dtype=torch.float64)],
            [torch.zeros(3)],
            [torch.zeros(3)],
            [torch.zeros(3)],
            1,
            1e-3,
            0.9,
            0.999,
            1e-8,
            0.0,
        )
    with pytest.raises(TypeError, match="float32 or float64 CPU tensors, got torch.float16"):
        chain.cpp_forward(torch.randn(4, 3).half(), *torch.randn(3, 3).half())


def test_without_triton_the_error_names_the_fallback(monkeypatch):
    monkeypatch.setattr(triton_env, "AVAILABLE", False)
    with pytest.raises(triton_env.TritonUnavailable, match="impl='cpp'"):
        chain.triton_forward(torch.randn(2, 3), *torch.randn(3, 3))


def test_timing_reports_the_median_of_real_work():
    result = timing.measure(lambda: time.sleep(0.01), warmup=1, repeats=7, flush=False)
    assert 0.009 < result.median < 0.05 and len(result.samples) == 7


def test_known_work_runs_on_the_stream_and_is_queued_when_the_host_calls_it():
    stream = timing.AsyncStandIn()
    work = labcheck.KnownWork(stream, 0.01)
    work()  # on the host: queued on the stream, as calling a kernel queues it
    assert not stream.on_stream()
    stream.launch(work)
    stream.synchronize()
    assert len(work.ran) == 2  # each ran once, on the stream (only a run on the stream is recorded)
    assert work.ran[0] >= labcheck.COLD_FACTOR * 0.01 and work.took == work.ran[1] >= 0.01  # the first is cold


SAMPLE_UNDER_LOAD = (
    "shipped",
    "solution",
    "the work called on the host instead of launched",
    "a fixed pause before reading the clock",
    "torch.utils.benchmark around a launch and its wait",
)


def test_the_benchmark_labs_verdicts_hold_on_a_busy_machine(tmp_path):
    """No wall-clock ratio is judged: under the busy-machine harness the solution and a correct alternative pass,
    and the shipped code and wrong fixes of both directions (no wait, a pause) fail, with the reason."""
    from trainlab.processes.busy import BusyMachine

    cases = [c for c in timing_verdicts.cases() if c[0] in SAMPLE_UNDER_LOAD]
    assert len(cases) == len(SAMPLE_UNDER_LOAD)
    with BusyMachine():
        verdicts = {name: (timing_verdicts.judge(text, tmp_path), passes) for name, text, passes in cases}
    wrong = {name: v["summary"] for name, (v, passes) in verdicts.items() if v["passed"] != passes}
    assert not wrong, wrong
    assert "less than one run of the work takes" in verdicts["shipped"][0]["summary"]
    assert "more than a run of the work takes" in verdicts["a fixed pause before reading the clock"][0]["summary"]


@pytest.mark.matrix
def test_every_benchmark_lab_entry_idle_and_under_load(tmp_path):
    """Every corpus entry of the benchmark lab, judged on the machine as it is and under the busy-machine harness
    (benchmarks/timing_verdicts.py does it 10 times each)."""
    from trainlab.processes.busy import BusyMachine

    cases = timing_verdicts.cases()
    idle = {name: timing_verdicts.judge(text, tmp_path)["passed"] for name, text, _ in cases}
    with BusyMachine():
        busy = {name: timing_verdicts.judge(text, tmp_path)["passed"] for name, text, _ in cases}
    expected = {name: passes for name, _, passes in cases}
    assert idle == expected and busy == expected, {"idle": idle, "busy": busy}


def test_stand_in_stream_raises_the_work_error_at_synchronize():
    stream = timing.AsyncStandIn()
    stream.launch(lambda: 1 / 0)  # returns: the error surfaces at the next synchronisation, as on a GPU
    with pytest.raises(ZeroDivisionError):
        stream.synchronize()


@pytest.mark.device  # the kernel labs' checks run on CUDA when a GPU is visible
@pytest.mark.parametrize("lab", ["kernels/softmax_mask", "kernels/rmsnorm_stride", "kernels/fake_speedup"])
def test_lab_checks_fail_the_shipped_code_and_pass_the_fix(lab, tmp_path):
    verdicts = {}
    for fixed in (False, True):
        script = labs.write(lab, tmp_path / f"{fixed}.py", fixed=fixed)
        verdicts[fixed] = labcheck.judge(lab, runpy.run_path(str(script), run_name="trainlab_check"))
    assert not verdicts[False]["passed"] and verdicts[True]["passed"], verdicts
    if lab == "kernels/softmax_mask":  # wrong exactly where the row length is not a power of two
        failing = {r["case"] for r in verdicts[False]["rows"] if r["result"] == "FAIL"}
        assert failing and all(
            int(c.split(",")[1].split("]")[0]) & (int(c.split(",")[1].split("]")[0]) - 1) for c in failing
        ), failing
    if lab == "kernels/rmsnorm_stride":  # wrong exactly where rows are not C elements apart
        assert [r["check"] for r in verdicts[False]["rows"] if r["result"] == "FAIL"] == [
            "strided input",
            "transposed input",
        ]


@pytest.mark.parametrize(
    "fill, check", [("-1e9", "values near -1e30"), ("-3.4028234663852886e38", "fully masked rows")]
)
def test_softmax_edge_cases_fail_a_finite_fill_that_ordinary_rows_pass(fill, check, tmp_path):
    script = tmp_path / "finite.py"
    script.write_text(labs.source("kernels/softmax_mask").replace("other=0.0)", f"other={fill})"))
    verdict = labcheck.judge("kernels/softmax_mask", runpy.run_path(str(script), run_name="trainlab_check"))
    failing = {r["check"] for r in verdict["rows"] if r["result"] == "FAIL"}
    assert not verdict["passed"] and check in failing and "values" not in failing, verdict["rows"]


def test_kernel_exercise_runs_the_learner_code_in_a_child():
    exercise = checks.get("kernels/softmax_mask")
    shipped = exercise.verdict(labs.source("kernels/softmax_mask"))
    assert shipped.kind == "not attempted" and "FAIL" in shipped.details  # the findings, before any edit
    assert exercise.verdict(labs.source("kernels/softmax_mask", fixed=True)).kind == "pass"


@matrix.parametrize("kernels/softmax_mask", "kernels/rmsnorm_stride")  # the benchmark lab's: above, idle and busy
def test_corpus(exercise, entry):
    matrix.assert_expected(entry, exercise.verdict(entry.edit.apply(exercise.lab)))


def test_profile_groups_the_step_and_attributes_the_optimizer():
    from trainlab.kernels import profile

    step = profile.profile_step(batch=8, steps=2)
    shares = {c["category"]: c["share"] for c in step.categories}
    assert abs(sum(shares.values()) - 1) < 1e-6
    assert max(shares, key=shares.get) == "matmul / conv"  # the ViT step is matmul-bound on CPU
    optimizer = next(c for c in step.categories if c["category"] == "optimizer")
    assert optimizer["calls"] > 100  # foreach AdamW runs per-tensor ops on CPU, all inside optimizer.step()
    assert 0 < step.small_calls <= step.calls


def test_every_triton_launch_compiles_for_a_gpu_without_one():
    # the interpreter accepted a non-constexpr global in the chain kernel; the compiler does not
    from trainlab.processes import runner

    result = runner.run_python(module="trainlab.kernels.gpu_compile", timeout=300, stream=False)
    assert result.ok, result.output[-3000:]
    compiled, total = re.search(r"compiled (\d+) of (\d+) kernel variants", result.output).groups()
    assert compiled == total and int(total) >= 20
