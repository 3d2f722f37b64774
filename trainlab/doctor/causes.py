"""Every cause the doctor can report, declared once: the registry the doctor's rules, the exercise
checks, the drills' mutations, the diagnosis menu and `docs/doctor_causes.md` all read.

    causes.get("missing-zero-grad").question     # the hypothesis an experiment answers
    causes.CAUSES                                # the menu: the causes a learner diagnoses
    causes.limit("dead-units", "check")          # the thresholds a cause is judged by, named

Each entry says what the cause is (id, category), how an engineer would meet it (the symptoms it
shows), how it is tested (the question, the experiments whose result tells it apart), how the
doctor detects it (the mechanism and the evidence fields of its finding) and the thresholds its
finding or verdict turns on, named (`_LIMITS`): the doctor's rule's and the exercise check's apart,
since the doctor's are absolute (it has no reference run) while a check may compare with the
solution's run. The mechanism is written as a template of those limits (`prose`), so the docs
state the numbers the code compares with. A finding whose id is not here is refused when it is made
(`report.Finding`). Questions say what a hypothesis tests, never how to fix it, so menus can show
them before the learner asks for help.
"""

import re
import string
from dataclasses import dataclass, field, replace

# The checklist's order, also the order findings of one severity are ranked in (`report.rank`).
CATEGORIES = ("distributed", "data", "model", "loss", "optimizer", "device", "precision", "run")
SYMPTOMS = ("no-convergence", "nan", "slow", "memory", "crash", "hang")
# The checklist's experiments, by id: what a learner runs to tell causes apart (each cause's `evidence`). Declared
# here, where the causes name them; module 01's investigation implements each (trainlab.debugging.investigate).
EXPERIMENT_IDS = (
    "input-stats",
    "label-test",
    "init-stats",
    "layer-gradients",
    "gradient-flow",
    "update-sizes",
    "control-run",
    "overfit-one-batch",
    "batch-contents",
    "loss-inputs",
    "train-mode",
    "first-nonfinite",
    "optimizer-coverage",
    "gradient-freshness",
    "lr-per-step",
    "lr-range-test",
    "optimizer-settings",
    "dtypes",
    "time-split",
    "host-reads",
    "memory-per-step",
)


@dataclass(frozen=True)
class Cause:
    id: str  # stable id, as in the doctor's findings and the labs' `#| cause` lines
    category: str  # one of CATEGORIES
    question: str | None = None  # the hypothesis as a question an experiment answers (None: not on the menu)
    evidence: tuple = ()  # ids of the experiments (EXPERIMENT_IDS) that discriminate it
    symptoms: tuple = ()  # what an engineer reports when this is the cause (SYMPTOMS)
    role: str = "cause"  # "cause", or "context": information beside the causes, never a root cause
    severities: tuple = ("critical", "warning")  # the severities its finding takes
    mechanism: str = ""  # how the doctor detects it, in words (the docs' table), formatted from its limits
    fields: tuple = ()  # the evidence fields of its finding
    limits: dict = field(default_factory=dict, hash=False)  # {"doctor": {...}, "check": {...}} (_LIMITS)


ALL = {
    c.id: c
    for c in (
        Cause(
            "inputs-not-normalised",
            "data",
            question="is the model's input near zero mean and unit variance?",
            evidence=("input-stats",),
            symptoms=("no-convergence",),
            mechanism=(
                "mean or std of the root module's input beyond {doctor[abs_mean]:g}, or a std under "
                "{doctor[std_below]:g} (inputs scaled twice)"
            ),
            fields=("input_mean", "input_std", "input_max"),
        ),
        Cause(
            "labels-misaligned",
            "data",
            question="do the labels carry information about the images?",
            evidence=("label-test",),
            symptoms=("no-convergence",),
            mechanism=(
                "a nearest-class-mean probe on the captured (input, label) pairs, on two views of the inputs "
                "(translation-invariant spectra; the pooled pixels), does not beat chance + {doctor[stderrs]} "
                "standard errors in either (≥ {doctor[min_samples]} samples)"
            ),
            fields=("label_test_accuracy", "chance", "samples", "view"),
        ),
        Cause(
            "batches-of-one-class",
            "data",
            question="does each training batch mix the classes?",
            evidence=("batch-contents",),
            symptoms=("no-convergence",),
            mechanism=(
                "at least {doctor[single_class_share]:share|} the captured training batches hold one class, "
                "where shuffled labels in batches of that size would give fewer than "
                "{doctor[by_chance_below]:.0%} (tiny batches hold one class by chance)"
            ),
            fields=("single_class_batches", "batches_checked", "by_chance"),
        ),
        Cause(
            "same-batch-every-step",
            "data",
            question="does each step train on a new batch?",
            evidence=("batch-contents",),
            symptoms=("no-convergence",),
            severities=("critical", "info"),
            mechanism=(
                "fewer distinct input batches than {doctor[distinct_share]:share|} the steps checked (info "
                "under LBFGS, a full-batch method)"
            ),
            fields=("batches_checked", "distinct_batches"),
        ),
        Cause(
            "target-leakage",
            "data",
            symptoms=(),  # a loss too good to be true is no symptom a user reports: it looks like success
            mechanism=(
                "a language model's input holds what it is asked to predict: its targets equal the input token at "
                "their own position in {doctor[same_share]:share|} the positions or more (the window was not "
                "shifted), or, trained on next tokens, its outputs before a position move when the token at that "
                "position is changed (the causality probe: more than {doctor[moved_ratio]:g} of the change where "
                "the token may act; no causal mask, a bidirectional layer, a convolution padded on both sides); "
                "a warning when only the loss is too good to be true: within the first {doctor[early_steps]} steps "
                "below {doctor[below_bigram]:share|} the text's bigram entropy (what reading one token back allows)"
            ),
            fields=(
                "targets_equal_inputs",
                "targets_equal_next_inputs",
                "earlier_outputs_moved",
                "early_loss",
                "bigram_entropy",
            ),
        ),
        Cause(
            "zero-initialisation",
            "model",
            question="do the weights start different from each other?",
            evidence=("init-stats", "layer-gradients"),
            symptoms=("no-convergence",),
            mechanism=(
                "at least {doctor[constant_share]:share|} the weight tensors start with identical units at the first "
                "forward: std 0, or every row (output unit) the same vector"
            ),
            fields=("constant_weight_tensors", "identical_row_tensors", "weight_tensors", "dead_relu_share"),
        ),
        Cause(
            "dead-units",
            "model",
            question="do the ReLU units fire?",
            evidence=("layer-gradients",),
            symptoms=("no-convergence",),
            mechanism=(
                "a ReLU layer outputs zero for > {doctor[dead_share]:.0%} of inputs (not explained by a constant init)"
            ),
            fields=("dead_relu_share",),
        ),
        Cause(
            "parameters-get-no-gradient",
            "model",
            question="does every parameter the optimizer holds get a gradient?",
            evidence=("gradient-flow",),
            symptoms=("no-convergence",),
            mechanism=(
                "after every inspected backward, parameters the forward pass used have `grad` None or "
                "identically zero (cut by `.detach()`, `.data` or a `no_grad` region; sub-modules run under "
                "`no_grad` inside a training forward are named), or are frozen (`requires_grad=False`) but held "
                "by the optimizer; critical when cut, frozen weight matrices, kernels or embeddings at their "
                "random initialisation (no `load_state_dict` of their module or an enclosing one, no "
                "`torch.distributed.checkpoint.load`), or frozen in a run that does not learn; info for frozen "
                "layers holding loaded weights in a learning run (fine-tuning)"
            ),
            fields=("modules", "tensors_without_gradient", "params", "how"),
        ),
        Cause(
            "cannot-overfit-one-batch",
            "model",
            question="can the model memorise one batch from its initial weights?",
            evidence=("overfit-one-batch",),
            symptoms=("no-convergence",),
            mechanism=(
                "50 Adam steps on one captured batch from the first-forward weights leave the loss above "
                "{doctor[kept_share]:.0%} of its start"
            ),
            fields=("loss_first", "loss_after_50_steps"),
        ),
        # off the menu: the first loss against ln(classes) is a reading that points at the init or the scale (whose
        # causes are on the menu), not a fault of its own to fix; a warning when far off, so it can lead a report
        Cause(
            "loss-at-init",
            "model",
            symptoms=("no-convergence",),
            severities=("warning", "info"),
            mechanism="first loss more than {doctor[gap]:g} away from ln(classes)",
            fields=("first_loss", "ln_classes"),
        ),
        Cause(
            "softmax-before-cross-entropy",
            "loss",
            question="does the loss function receive logits?",
            evidence=("loss-inputs",),
            symptoms=("no-convergence",),
            mechanism="a loss function receives rows that are all ≥ 0 and sum to 1",
            fields=("calls_with_probabilities",),
        ),
        Cause(
            "unstable-loss",
            "loss",
            question="is the loss finite while the model's outputs are finite?",
            evidence=("first-nonfinite",),
            symptoms=("nan",),
            mechanism="the loss is non-finite while every module output was finite",
            fields=("first_nonfinite_loss_step", "first_nonfinite_module_step"),
        ),
        Cause(
            "loss-not-differentiable",
            "loss",
            question="does the loss depend on the parameters differentiably?",
            evidence=("gradient-flow",),
            symptoms=("no-convergence",),
            mechanism=(
                "backward() ran on a leaf loss (made with `requires_grad_()` or `torch.tensor`), or no "
                "parameter got a gradient from any inspected backward"
            ),
            fields=("loss_leaf_backwards", "backwards_without_any_gradient", "backwards_checked", "loss_varies"),
        ),
        Cause(
            "params-not-in-optimizer",
            "optimizer",
            question="is every parameter the forward pass uses in the optimizer?",
            evidence=("optimizer-coverage",),
            symptoms=("no-convergence",),
            mechanism="parameter tensors used in the forward pass that no optimizer holds",
            fields=("params_not_optimized", "optimized_but_unused"),
        ),
        Cause(
            "missing-zero-grad",
            "optimizer",
            question="does each backward start from zero gradients?",
            evidence=("gradient-freshness",),
            symptoms=("no-convergence",),
            mechanism=(
                "per updater (each optimizer, or the script's own update found by value): its parameters' "
                "gradients never seen zeroed (None or all zero, at any backward or at its next update) between "
                "two of its updates, in all but one of ≥ {doctor[min_updates]} inspected updates"
            ),
            fields=("backwards_with_stale_grads", "checked"),
        ),
        Cause(
            "zero-grad-before-step",
            "optimizer",
            question="are the gradients still there when the optimizer steps?",
            evidence=("layer-gradients",),
            symptoms=("no-convergence",),
            mechanism=(
                "every gradient is zero when `optimizer.step()` runs, though backward produced gradients; or, "
                "per optimizer, on ≥ {doctor[min_steps]} inspected steps a backward gave its parameters "
                "gradients and none were left when it stepped (a GAN's generator cleared before its step)"
            ),
            fields=("grad_norm_at_step", "steps_checked", "optimizer"),
        ),
        Cause(
            "weight-decay-too-high",
            "optimizer",
            question="how much does weight decay shrink the weights per step?",
            evidence=("optimizer-settings",),
            symptoms=("no-convergence",),
            mechanism="weight decay above {doctor[SGD]:g} (SGD) or {doctor[AdamW]:.1f} (AdamW)",
            fields=("weight_decay", "lr", "shrink_per_step"),
        ),
        Cause(
            "missing-optimizer-step",
            "optimizer",
            question="do the weights change after each step?",
            evidence=("optimizer-coverage",),
            symptoms=("no-convergence",),
            severities=("critical", "warning", "info"),
            mechanism=(
                "the model called but no backward and no step at all (critical after ≥ {doctor[min_forwards]} "
                "training forwards, else warning); or ≥ {doctor[min_backwards]} backwards, no torch.optim step, "
                "and the model's trainable parameters unchanged from each of ≥ {doctor[min_iterations]} "
                "iterations' first backward to the next training forward (compared by value: a hand-written "
                "update changes them); info when no iteration could be compared"
            ),
            fields=("backwards", "optimizer_steps", "iterations_compared", "training_forwards"),
        ),
        Cause(
            "lr-schedule-too-fast",
            "optimizer",
            question="what is the learning rate at each step?",
            evidence=("lr-per-step",),
            symptoms=("no-convergence",),
            mechanism="the LR falls below {doctor[floor]:inverse|g} of its peak within the run",
            fields=("lr_peak", "lr_now", "steps"),
        ),
        Cause(
            "lr-too-high",
            "optimizer",
            question="is the learning rate inside the range where the loss falls?",
            evidence=("lr-range-test", "first-nonfinite", "update-sizes"),  # what its mechanism reads
            symptoms=("nan", "no-convergence"),
            mechanism=(
                "the loss grows {doctor[loss_growth]}x and then a module produces inf/NaN from finite inputs; "
                "or the run does not learn at an LR {doctor[above_suggestion]}x above the LR range test's "
                "suggestion; or the update-to-weight ratio exceeds {doctor[update_ratio]:g} in a run that does "
                "not learn"
            ),
            fields=(
                "first_nonfinite_module",
                "first_nonfinite_step",
                "lr",
                "loss_first",
                "loss_peak",
                "suggested_lr",
                "update_ratio_median",
                "smallest",
                "largest",
            ),
        ),
        Cause(
            "lr-too-low",
            "optimizer",
            question="how much does each step change the weights?",
            evidence=("update-sizes", "lr-range-test"),
            symptoms=("no-convergence",),
            mechanism=(
                "median update-to-weight ratio \\|Δw\\|/\\|w\\| over weight tensors below "
                "{doctor[update_ratio]:g} on the inspected steps in a run that does not learn (and not "
                "explained by tight clipping)"
            ),
            fields=("update_ratio_median", "smallest", "largest", "steps_checked", "lr"),
        ),
        Cause(
            "clipping-too-tight",
            "optimizer",
            question="how much of the gradient does clipping keep?",
            evidence=("update-sizes",),
            symptoms=("no-convergence",),
            mechanism=(
                "`clip_grad_norm_`/`clip_grad_value_` wrapped: the norm after over the norm before keeps < "
                "{doctor[norm_kept]:.0%} at the median step in a run that does not learn (critical); a gradient "
                "norm pinned at one value by hand-written rescaling (warning)"
            ),
            fields=("norm_kept", "grad_norm_at_step", "norm_pinned"),
        ),
        Cause(
            "fp16-master-weights",
            "precision",
            question="in which dtype do the optimizer's weights and state live?",
            evidence=("dtypes",),
            symptoms=("nan", "no-convergence"),
            mechanism="an optimizer updates float16 parameters",
            fields=("param_dtypes", "optimizer_eps", "eps_in_fp16"),
        ),
        Cause(
            "float64-compute",
            "precision",
            question="in which dtype do the layers compute?",
            evidence=("dtypes",),
            symptoms=("slow",),
            severities=("critical", "info"),
            mechanism="layers output float64 (info under LBFGS, whose line search is often run in float64 by design)",
            fields=("float64_outputs",),
        ),
        Cause(
            "bf16-master-weights",
            "precision",
            question="do the optimizer's updates survive being added to the weights?",
            evidence=("dtypes", "update-sizes"),
            symptoms=("no-convergence",),
            mechanism=(
                "an optimizer updates bfloat16 parameters (critical when more than {doctor[lost_share]:.0%} of "
                "the weights a gradient pushed kept their value to the next inspected step)"
            ),
            fields=("lost_update_share",),
        ),
        Cause(
            "fp16-gradient-underflow",
            "precision",
            question="how many gradient entries are exactly zero?",
            evidence=("dtypes", "gradient-flow"),
            symptoms=("no-convergence",),
            mechanism=(
                "layers compute in float16 on float32 weights and more than {doctor[zero_share]:.0%} of the "
                "gradient entries reach the optimizer exactly zero"
            ),
            fields=("zero_gradient_share",),
        ),
        Cause(
            "data-loader-starves",
            "device",
            question="how much of a step is spent waiting for data?",
            evidence=("time-split",),
            symptoms=("slow",),
            mechanism=(
                "> {doctor[wait_share]:.0%} of a step waiting for data, or samples fetched one by one at > "
                "{doctor[per_sample_s]:us|g} µs each"
            ),
            fields=("data_wait_share", "step_ms", "sample_fetches_per_step", "us_per_sample"),
        ),
        Cause(
            "host-syncs-in-loop",
            "device",
            question="how many host reads (device syncs) run per step?",
            evidence=("host-reads",),
            symptoms=("slow",),
            mechanism=(
                "> {doctor[reads]} host reads of tensor values per step (info below). Only device values count: on a "
                "CPU run a tensor is host memory until it moves with `.to(device)` or is computed from the model "
                "(factories, `from_numpy`, a DataLoader's batches and what is computed from them alone stay on the "
                "host, as on a GPU), so a sampler indexing a host tensor with sampled offsets reads nothing; a copy "
                'to the host - `.cpu()`, or `.to("cpu")` with the CPU written in the call - is one read, and '
                "reads of the copy are free"
            ),
            fields=("host_reads_per_step",),
        ),
        Cause(
            "batch-too-small",
            "device",
            question="how many samples does each step process?",
            evidence=("batch-contents",),
            symptoms=("slow",),
            severities=("critical", "info"),
            mechanism=(
                "fewer than {doctor[critical_below]} samples per step ({doctor[critical_below]} to "
                "{doctor[info_below]:under|}: info, since whether the device idles is not measured)"
            ),
            fields=("batch_size", "step_ms"),
        ),
        Cause(
            "slow-step",
            "device",
            question="what share of a step is the model's own forward, backward and optimizer step?",
            evidence=("time-split",),
            symptoms=("slow",),
            severities=("warning", "info"),
            mechanism=(
                "on a CPU, a step (median over the steps after the 8 inspected ones, ≥ "
                "{doctor[min_timed_steps]} of them) takes more than {doctor[step_ratio]:g}x the work it needs - "
                "the model's own training forward, backward and optimizer step (a closure's forward and "
                "backward counted once) and other modules' forwards (a teacher), timed around each on the same "
                "steps - and the rest is over {doctor[rest_s]:ms|g} ms: the largest part of the rest is named "
                "(waiting for data, host reads, forwards of the model no backward follows, the loop's own "
                "work); or the model (≥ {doctor[rest_s]:ms|g} ms a step) computes with at most "
                "{doctor[thread_share]:share|} the intra-op threads torch started with (physical cores, or what "
                "OMP_NUM_THREADS or a launcher set). Info when a finding above info with the same symptom "
                "explains the run. Not judged on a GPU, where the timed regions are launches"
            ),
            fields=(
                "step_ms",
                "model_ms",
                "other_models_ms",
                "intra_op_threads",
                "default_threads",
                "data_ms",
                "host_reads_ms",
                "extra_forwards_ms",
                "loop_ms",
            ),
        ),
        Cause(
            "graph-kept-alive",
            "device",
            question="does memory held for backward grow from step to step?",
            evidence=("memory-per-step",),
            symptoms=("memory",),
            mechanism=(
                "autograd graphs of earlier steps still alive, counted through weak references: saved tensors "
                "tagged by step (critical: activations kept, as with `retain_graph=True`), or a marker in each "
                "inspected loss's `grad_fn` metadata (warning: nodes kept by a list of losses or `total += "
                "loss`); weak references to the loss tensors tell a list from a running sum; and whatever keeps "
                "them, a marker in every node of each inspected loss graph: the nodes of earlier steps still "
                "alive (warning when they pile up: outputs or activations kept across steps)"
            ),
            fields=(
                "graphs_alive_after_step",
                "steps_checked",
                "loss_tensors_alive",
                "growth_bytes_per_step",
                "held_bytes_last_step",
                "graph_nodes_kept",
            ),
        ),
        Cause(
            "crash",
            "run",
            symptoms=("crash",),
            mechanism="the script raised: the message, and where (file:line); the traceback is in the report's `crash`",
            fields=("where",),
        ),
        Cause(
            "update-sizes",
            "optimizer",
            symptoms=(),
            role="context",
            severities=("info",),
            mechanism=(
                "the median \\|Δw\\|/\\|w\\| per step over weight tensors (healthy runs sit near 1e-3 to 1e-2), "
                "the smallest and largest layer"
            ),
            fields=("update_ratio_median", "smallest", "largest", "steps_checked"),
        ),
        Cause(
            "adversarial-imbalance",
            "model",
            question="do both adversarial models step, and does the discriminator leave the generator a gradient?",
            evidence=("optimizer-coverage", "loss-inputs"),
            symptoms=("no-convergence",),
            mechanism=(
                "the task is adversarial (≥ 2 optimizers over separate parameters and a binary cross-entropy): "
                "critical when one optimizer never steps while another steps ≥ {doctor[min_steps]} times; info "
                "when ≥ {doctor[saturated_share]:.0%} of the binary loss's inputs sit at 0 or 1 (|logit| > 9) "
                "in the median call of the run's second half, a saturated discriminator (an easy data set "
                "saturates a healthy one too)"
            ),
            severities=("critical", "info"),
            fields=("optimizer_steps", "saturated_share"),
        ),
        Cause(
            "head-wider-than-classes",
            "model",
            question="does the model have as many outputs as the data has classes?",
            evidence=("batch-contents", "init-stats"),
            symptoms=("no-convergence",),
            severities=("warning",),
            mechanism=(
                "a classification whose output width is ≥ {doctor[width_ratio]}x and ≥ {doctor[extra_outputs]} "
                "more than the largest class index in the captured training targets + 1, over ≥ "
                "{doctor[samples_per_class]} samples per class used (a head copied from another task)"
            ),
            fields=("outputs", "largest_label", "samples"),
        ),
        Cause(
            "eval-mode-in-training",
            "model",
            question="is the model in training mode during the training steps?",
            evidence=("train-mode",),
            symptoms=("no-convergence",),
            severities=("warning", "info"),
            mechanism=(
                "at each of the first 8 training forwards (gradients enabled) of each trained module (the "
                "model, and each module called at the top level whose parameters an optimizer updates: a GAN's "
                "two models), its train/eval flag and its BatchNorm and Dropout modules' (the Modes "
                "instrument): warning when a trained module is in eval mode in all but one of ≥ "
                "{doctor[min_forwards]} of them (a validation pass's model.eval() never undone); info when only "
                "some of those modules stay in eval (frozen on purpose)"
            ),
            fields=("training_forwards", "model_in_eval", "modules_in_eval", "mode_modules", "examples", "module"),
        ),
        Cause(
            "relu-on-logits",
            "model",
            question="can the scores handed to the loss be negative?",
            evidence=("loss-inputs",),
            symptoms=("no-convergence",),
            mechanism=(
                "what cross_entropy is handed in training calls: no logit negative and some exactly zero "
                "(probabilities and exp() never are), in all but one of ≥ {doctor[min_calls]} calls (critical "
                "when the run does not learn, else warning)"
            ),
            fields=("calls_nonnegative", "calls_checked"),
        ),
        Cause(
            "regularisation-too-strong",
            "model",
            symptoms=("no-convergence",),
            severities=("critical", "warning"),
            mechanism=(
                "a training forward's dropout drops {doctor[dropout]:.0%} of the "
                "activations or more, or cross_entropy's label smoothing leaves the true class under "
                "{doctor[true_over_wrong]:g}x any other class's share of the target (critical when the run does not "
                "learn); the update-size rule does not name the learning rate then"
            ),
            fields=("dropout_max", "label_smoothing", "update_ratio_median"),
        ),
        Cause(
            "loss-inputs-broadcast",
            "loss",
            symptoms=("no-convergence",),
            severities=("critical",),
            mechanism=(
                "an elementwise regression loss (mse, l1, smooth l1, huber) handed an input and a target "
                "of different shapes that broadcast to a bigger one, in a training call"
            ),
            fields=("loss", "input_shape", "target_shape", "calls"),
        ),
        Cause(
            "loss-unbounded-below",
            "loss",
            symptoms=("no-convergence", "nan"),
            severities=("critical",),
            mechanism=(
                "the median loss of the last tenth of the steps below -{doctor[below_start]:g}x the first tenth's "
                "magnitude (at least 1), and below the tenth before it by {doctor[still_falling]:g}x: still falling"
            ),
            fields=("loss_first", "loss_last", "steps"),
        ),
        Cause(
            "squashed-logits",
            "model",
            symptoms=("no-convergence",),
            mechanism=(
                "the autograd graph of what cross_entropy, nll_loss or binary_cross_entropy_with_logits are handed, "
                "walked back to the last layer through views: a tanh, sigmoid, hardtanh, hardsigmoid or clamp in "
                "{doctor[call_share]:share|} the training calls read or more (≥ {doctor[min_calls]})"
            ),
            fields=("squashing", "calls_squashed", "calls_checked"),
        ),
        Cause(
            "softmax-wrong-axis",
            "loss",
            question="over which axis are the scores normalised before the loss?",
            evidence=("loss-inputs",),
            symptoms=("no-convergence",),
            severities=("critical",),
            mechanism=(
                "what cross_entropy/nll_loss are handed in training calls: scores (probabilities, or "
                "log-probabilities exponentiated) whose columns - one per class, over the batch - each sum to 1 "
                "while the rows do not, in {doctor[call_share]:share|} the calls or more (≥ {doctor[min_calls]})"
            ),
            fields=("calls_normalised_over_batch", "calls_checked"),
        ),
        Cause(
            "updates-by-hand",
            "optimizer",
            symptoms=(),
            role="context",
            severities=("info",),
            mechanism=(
                "no torch.optim step, yet the model's parameters change between iterations (compared by value "
                "after each of the first 8 iterations: `p.data.add_`, `p.data = ...` and other libraries' "
                "optimizers do not bump version counters); names the rules that read torch.optim and so stay "
                "silent"
            ),
            fields=("updates_by_hand", "iterations_compared", "measured_by_value", "silent"),
        ),
        Cause(
            "gradient-clipping",
            "optimizer",
            symptoms=(),
            role="context",
            severities=("info",),
            mechanism="the share of the gradient norm clipping keeps",
            fields=("norm_kept", "grad_norm_at_step", "norm_pinned"),
        ),
        Cause(
            "learns-far-worse",
            "optimizer",
            question="how far does a known-good loop take the same model on the same batches?",
            evidence=("control-run",),
            symptoms=("no-convergence",),
            severities=("warning", "info"),
            mechanism=(
                "a classification: the control run (as below; for a script that learns, as many of 16-32 steps "
                "as the time left allows, none when the script's model already scores "
                "{doctor[gap]:complement|.0%}, never more than the script's) ends ≥ {doctor[gap]:points|g} "
                "points and {doctor[stderrs]} standard errors above the script's own model in held-out accuracy "
                "on the same held-out captured batches (which the script trained on once: the comparison leans "
                "its way); info when another finding above info explains the run"
            ),
            fields=(
                "script_held_out_acc",
                "control_held_out_acc",
                "gap",
                "stderr",
                "held_out_samples",
                "script_steps",
                "control_steps",
                "script_held_out_loss",
                "control_held_out_loss",
                "script_loop",
            ),
        ),
        Cause(
            "control-run",
            "run",
            symptoms=(),
            role="context",
            severities=("info",),
            mechanism=(
                "the differential diagnosis: the script's model, from its first-forward weights, trained on its "
                "captured batches (the last 2 held out) with a known-good loop (cross-entropy on the logits, "
                "AdamW lr 3e-3, no clipping, zeroed gradients, fp32, 64 steps). If the control learns (held-out "
                "loss 3% below both its start and the class-prior loss) and the script does not, the fault is "
                "in the loop; if it fails too, in the data or the model"
            ),
            fields=(
                "held_out_loss_before",
                "held_out_loss_after",
                "held_out_acc_before",
                "held_out_acc_after",
                "chance",
                "prior_loss",
                "learns",
                "control_train_loss",
                "script_loss",
            ),
        ),
        Cause(
            "experiments-skipped",
            "run",
            symptoms=(),
            role="context",
            severities=("info",),
            mechanism=(
                "experiments the doctor did not run: on a sharded (FSDP) model, whose copy cannot run on one "
                "rank; on targets an experiment cannot use (each says which forms it takes: "
                "`quick_experiments.APPLIES_TO` - class indices and probabilities, not multi-label, regression "
                "values or token ids); when at the script's own time per step one would not fit in what the run "
                "left of the doctor's `--time-limit` (`--every-experiment` runs them whatever they cost); or one "
                "that raised, whose result is lost while the rest of the report stands"
            ),
            fields=("why", "error"),
        ),
        Cause(
            "unexplained-symptom",
            "run",
            symptoms=(),  # whichever symptom it reports
            severities=("warning", "info"),
            mechanism=(
                "a symptom the run shows (not learning, a non-finite loss, memory that grows) that no finding above "
                "info explains: the symptom's numbers, the measurements that came out clean, the info findings "
                "that may still be it, and what the doctor does not measure, to look at next; info when the run "
                "only does not learn yet, in {doctor[early_steps]} steps or fewer, with nothing to place it: the "
                "control did not learn either while the model memorises a batch (one-batch loss under "
                "{doctor[memorised_share]:share|} its start), or the experiments did not fit in the time limit - "
                "too early to call"
            ),
            fields=("symptoms", "ruled_out", "may_still_be"),
        ),
        Cause(
            "compile-disabled",
            "run",
            symptoms=(),
            role="context",
            severities=("info",),
            mechanism=(
                "`torch.compile` / `nn.Module.compile` calls, which the doctor turns into no-ops so hooks see "
                "eager modules"
            ),
            fields=("compile_calls",),
        ),
        Cause(
            "partial-collective",
            "distributed",
            symptoms=("hang",),
            mechanism=(
                "the ranks' collective logs, compared call by call per process group: at the first disagreement "
                "a rank has a call the others do not have at all, or one (the same op from the same call site) "
                "that no other rank makes there or later - a collective inside `if rank == 0`"
            ),
            fields=("kind", "call_index", "group", "rank_<r>"),
        ),
        Cause(
            "collective-mismatch",
            "distributed",
            symptoms=("hang",),
            mechanism=(
                "the same comparison: the ranks call different collectives at the same index, or hand the same "
                "one tensors of different shapes (all-to-all splits and pickled objects may differ)"
            ),
            fields=("kind", "call_index", "group", "rank_<r>"),
        ),
        Cause(
            "uneven-steps",
            "distributed",
            symptoms=("hang",),
            mechanism=(
                "the ranks' optimizer steps, backward passes or training forwards of the model differ (critical "
                "when a rank then waited in a collective: the one with more batches starts a step nobody joins)"
            ),
            fields=("rank_<r>_steps", "rank_<r>_backwards", "rank_<r>_forwards"),
        ),
        Cause(
            "same-data-every-rank",
            "distributed",
            symptoms=("no-convergence",),
            mechanism="the first training batches' fingerprints are identical on every rank (at least 2 compared)",
            fields=("identical_batches", "batches_compared", "ranks"),
        ),
        Cause(
            "replicas-diverge",
            "distributed",
            symptoms=("no-convergence",),
            mechanism=(
                "fingerprints of the replicated parameters at the root's forward (critical), or of the buffers "
                "after DDP's broadcast (warning), differ across ranks at the start of an inspected step; "
                "sharded models (FSDP) are not compared"
            ),
            fields=("what", "step", "tensors", "modules"),
        ),
        Cause(
            "rank0-checkpoint",
            "distributed",
            symptoms=(),
            mechanism=(
                "`torch.save` of sharded tensors (DTensor shards) by some ranks only (critical: the file holds "
                "that rank's shards alone); by every rank (warning: loadable only at this world size)"
            ),
            fields=("ranks_that_saved", "site", "sharded_tensors"),
        ),
        Cause(
            "root-only-wrap",
            "distributed",
            symptoms=("memory",),
            mechanism=(
                "an FSDP model with fewer FSDP units than its repeated blocks plus the root (warning: memory "
                "and overlap, not correctness)"
            ),
            fields=("fsdp_units", "blocks"),
        ),
        Cause(
            "optimizer-before-sharding",
            "distributed",
            symptoms=("no-convergence",),
            mechanism=(
                "the model is sharded (DTensor parameters) and none of the tensors the optimizer holds is one "
                "of its parameters: it was built before `fully_shard` swapped them (replaces "
                "`params-not-in-optimizer` for that run)"
            ),
            fields=("optimizer_tensors", "model_params", "model_dtensors"),
        ),
        Cause(
            "straggler",
            "distributed",
            symptoms=("slow",),
            severities=("warning",),
            mechanism=(
                "median time per step by rank, minus its time inside collectives: a rank that computes 1.5x "
                "longer than the fastest (and > 5 ms) makes the others wait"
            ),
            fields=("rank_<r>",),
        ),
        Cause(
            "rank-step-times",
            "distributed",
            symptoms=(),
            severities=("info",),
            mechanism="the same numbers when no rank stands out: ms per step and ms in collectives, by rank",
            fields=("rank_<r>",),
        ),
        Cause(
            "rank-did-not-finish",
            "run",
            symptoms=("hang",),
            mechanism=(
                "a rank left no report (killed at the time limit, or the doctor failed on it); its last logged "
                "collective is named"
            ),
            fields=("rank", "timed_out"),
        ),
    )
}

# The thresholds each cause is judged by, named: "doctor" for the rule's, "check" for the exercise check's
# (`trainlab.checks.mechanisms`). The doctor flags only what is wrong in any script (no reference run); a
# check accepts only what the lab's fix reaches, and may compare with the solution's run. Decided in the
# checks' second round: they stay apart wherever a healthy script can sit between them (an input scaled to
# [0, 1] is no alarm for the doctor, and no fix for the check). Shares are fractions, times in seconds;
# counts of inspected steps or calls below which a rule does not judge are here where its prose states them.
_LIMITS = {
    # data
    # the doctor knows no data set: only inputs far off (pixel values) are an alarm, so scaling to [0, 1]
    # stays silent; the check compares with the solution's input, normalised by the data's own statistics
    "inputs-not-normalised": {
        "doctor": {"abs_mean": 5.0, "std_above": 5.0, "std_below": 0.01},  # ... or a std this tiny (scaled twice)
        "check": {
            "abs_mean": 1.0,
            "std_below": 0.2,
            "std_above": 5.0,  # without a reference
            "mean_from_reference": 0.25,
            "std_ratio": 1.5,
        },
    },
    "labels-misaligned": {
        "doctor": {
            "stderrs": 4,  # the probe must beat chance by this many standard errors
            "min_samples": 256,
        },  # captured (input, label) pairs needed to judge
        "check": {"stderrs": 4},
    },  # the same probe on the learner's run
    "batches-of-one-class": {
        "doctor": {
            "single_class_share": 0.5,  # of the captured batches holding one class
            "by_chance_below": 0.05,
        }
    },  # ... where shuffled labels give fewer than this
    "same-batch-every-step": {
        "doctor": {"distinct_share": 0.5},  # distinct batches under this share of the steps
        "check": {"distinct_share": 0.5},
    },
    "target-leakage": {
        "doctor": {
            "same_share": 0.9,  # of the targets equal to the input token at their own position
            "next_share": 0.5,  # ... at the next position, at least: next-token targets, so the causality probe runs
            "moved_ratio": 0.001,  # an earlier output's change over the change at and after the changed token
            "early_steps": 48,  # the steps whose loss is compared with the bigram entropy
            "below_bigram": 0.5,  # a loss under this share of the bigram entropy that early is too good
        }
    },
    # model
    "zero-initialisation": {
        "doctor": {"constant_share": 0.5},  # at least half the weight tensors constant
        "check": {"constant_tensors": 1},
    },  # any constant weight tensor
    "dead-units": {
        "doctor": {
            "dead_share": 0.98,  # of a ReLU layer's outputs at zero
            "critical_share": 0.99,
        },  # ... critical above this, else a warning
        "check": {"dead_share": 0.95},
    },
    # dead ReLUs above this share explain parameters without gradients (no finding then)
    "parameters-get-no-gradient": {"doctor": {"dead_share": 0.9}},
    "cannot-overfit-one-batch": {
        "doctor": {
            "kept_share": 0.7,  # of the first loss still left after the steps
            "first_loss_above": 0.5,
        }
    },  # a first loss at or below this is fit already
    "loss-at-init": {"doctor": {"gap": 1.0}},  # |first loss - ln(classes)| above this: a warning, else info
    "adversarial-imbalance": {
        "doctor": {
            "min_steps": 10,  # steps of the other optimizer while one never steps
            "saturated_share": 0.9,
        }
    },  # of the binary loss's inputs at 0 or 1
    "head-wider-than-classes": {
        "doctor": {
            "width_ratio": 4,  # outputs at least this times the classes the labels use
            "extra_outputs": 20,  # ... and at least this many more
            "samples_per_class": 20,
        }
    },  # labels seen per class used, at least
    "eval-mode-in-training": {"doctor": {"min_forwards": 3}},  # training forwards inspected, at least
    "relu-on-logits": {"doctor": {"min_calls": 3}},  # loss calls inspected, at least
    # loss
    # the check compares the loss's gradient at the logits with the solution's (the doctor has no solution)
    "softmax-before-cross-entropy": {"check": {"logit_gradient_cosine": 0.95}},
    # the check compares the loss's gradient at the logits with the solution's: a finite, masked loss sends back another
    "unstable-loss": {"check": {"logit_gradient_cosine": 0.95}},
    "unexplained-symptom": {
        "doctor": {
            "memorised_share": 0.75,  # overfit-one-batch's last loss under this share of its first: it memorises
            "early_steps": 128,  # a run of at most this many steps (twice the control run's) is early to call
        }
    },
    "regularisation-too-strong": {
        "doctor": {
            "dropout": 0.8,  # of the activations dropped, at least: most of the signal
            "true_over_wrong": 3,  # a smoothed target's true class under this many times a wrong class's share
        }
    },
    "loss-unbounded-below": {
        "doctor": {
            "below_start": 10,  # the last tenth's median loss below minus this many times the first's magnitude
            "still_falling": 1,  # ... and below the tenth before it by this many times that magnitude
        }
    },
    "squashed-logits": {"doctor": {"call_share": 0.9, "min_calls": 3}},  # of the calls read, at least
    "softmax-wrong-axis": {
        "doctor": {
            "call_share": 0.5,  # of the loss calls normalised over the batch
            "min_calls": 3,
        }
    },  # loss calls inspected, at least
    # optimizer
    "missing-zero-grad": {"doctor": {"min_updates": 3}},  # updates inspected per updater, at least
    "zero-grad-before-step": {
        "doctor": {"min_steps": 3},  # optimizer steps inspected, at least
        "check": {"zero_share": 0.5},
    },  # of the steps with every gradient zero, at most
    "weight-decay-too-high": {
        "doctor": {"SGD": 0.01, "AdamW": 1.0, "other": 0.1},  # far above 5e-4 / 0.01..0.1
        "check": {"most": 0.1},
    },
    "missing-optimizer-step": {
        "doctor": {
            "min_forwards": 10,  # training forwards, no backward: critical from here
            "min_backwards": 10,  # backwards with no step before it is judged
            "min_iterations": 3,  # iterations compared by value: critical from here
        },
        "check": {"unchanged_share": 0.5},  # of the inspected steps changing no weight the optimizer holds, at most
    },
    "lr-schedule-too-fast": {
        "doctor": {
            "floor": 1e-3,  # of the peak LR: below it the LR has collapsed
            "collapsed_share": 0.1,
        },  # of the steps run there (an annealing end is less)
        "check": {"rtol": 1e-6},
    },  # the LR per step equals the reference's within this
    "lr-too-high": {
        "doctor": {
            "loss_growth": 3,  # the loss grows this many times before a module turns non-finite
            "above_suggestion": 10,  # an LR this many times the range test's suggestion
            "update_ratio": 0.1,  # |delta w| / |w| per step, median over weight tensors
            "first_update_ratio": 1.0,  # a first step larger than the weights themselves
            "safe_lr_factor": 2,  # an LR within this factor of the suggestion: not too high
        },
        "check": {"update_ratio": 3},  # |delta w| / |w| per step at most this times the solution's
    },
    # |delta w| / |w| per step, median over weight tensors: healthy runs sit near 1e-3
    "lr-too-low": {"doctor": {"update_ratio": 1e-5}},
    "clipping-too-tight": {
        "doctor": {
            "norm_kept": 0.1,  # of the gradient's norm clipping keeps, at the median step
            "pinned_spread": 1e-3,
        }
    },  # gradient norms within this of their largest: pinned
    # lr-too-high's check: clipping may not stand in for the fix (checks.mechanisms.GradientNotCut): the median
    # clipping call keeps at least this share of the gradient's norm
    "gradient-clipping": {"check": {"norm_kept": 0.5}},
    "learns-far-worse": {
        "doctor": {
            "gap": 0.2,  # held-out accuracy the control beats the script by, at least
            "stderrs": 3,
        }
    },  # ... and by more than this many standard errors
    # device
    "data-loader-starves": {
        "doctor": {
            "wait_share": 0.3,  # of a step spent waiting for the next batch ("slow")
            "critical_share": 0.5,  # ... critical above this, else a warning
            "per_sample_s": 50e-6,  # loader work per sample fetched one by one
            "min_fetches": 32,
        },  # ... judged from this many fetches per step
        "check": {"wait_share": 0.3, "sample_fetches": 32},
    },  # at most, in the learner's run
    "host-syncs-in-loop": {
        "doctor": {
            "reads": 16,  # host reads per forward-backward pass ("slow": per step)
            "critical_reads": 64,
        },  # ... critical above this, else a warning
        "check": {"mean": 8, "most": 16},
    },  # per step, on average and on any step
    "batch-too-small": {
        "doctor": {
            "critical_below": 8,  # samples per step: critical under this
            "info_below": 16,
        },  # ... info under this
        "check": {
            "reference_share": 0.5,  # of the reference's samples per step, at least
            "least": 32,
        },
    },  # ... and this many when the reference's size is unknown
    "slow-step": {
        "doctor": {
            "min_timed_steps": 5,  # timed steps after the inspected ones, at least
            "step_ratio": 2.0,  # a step taking more than this times the model's own work
            "rest_s": 0.02,  # ... when the rest is more than this (a loop's own Python costs ~1 ms)
            "thread_share": 0.5,
        }
    },  # intra-op threads at most this share of torch's default
    # saved activations growing per step, and nodes of earlier steps' graphs alive beyond the solution's
    "graph-kept-alive": {
        "doctor": {
            "growth_bytes": 1e6,  # graph memory kept alive, growth per step ("memory")
            "graphs_alive": 3,
        },  # earlier steps whose graphs are all still alive
        "check": {"growth_bytes": 1e6},
    },
    # precision
    "fp16-master-weights": {"check": {"low_precision_share": 0.5}},  # of layer outputs in fp16/bf16, at least
    "bf16-master-weights": {
        "doctor": {"lost_share": 0.05},  # of the pushed weights that kept their value
        "check": {"lost_share_over_reference": 0.02},
    },  # ... above the solution's, at most
    "fp16-gradient-underflow": {
        "doctor": {"zero_share": 0.25},  # of the gradient entries exactly zero
        "check": {
            "zero_share_over_reference": 0.03,  # ... above the solution's, at most
            "low_precision_share": 0.5,
        },
    },  # of layer outputs in fp16/bf16, at least
}


class _Prose(string.Formatter):
    """Formats a mechanism template with its cause's limits: `{doctor[key]:spec}`, `{check[key]:spec}`.
    Beside a number's own format spec, a spec may say how the prose words it, before a `|`:
    `share|` ("half", else "40% of"), `inverse|g` ("1/1000"), `complement|.0%` (1 - x), `points|g`
    (x * 100: percentage points), `ms|g` and `us|g` (seconds in ms or µs), `under|` (the integer
    below x). Exponents are written as in the code (1e-5, not 1e-05)."""

    WAYS = {
        "": lambda v: v,
        "inverse": lambda v: 1 / v,
        "complement": lambda v: 1 - v,
        "points": lambda v: 100 * v,
        "ms": lambda v: 1e3 * v,
        "us": lambda v: 1e6 * v,
        "under": lambda v: v - 1,
    }

    def format_field(self, value, spec):
        way, _, spec = spec.rpartition("|")
        if way == "share":
            return "half" if value == 0.5 else f"{value:.0%} of"
        text = super().format_field(self.WAYS[way](value), spec)
        text = re.sub(r"(?<=\d)e(?:\+|(-))0*(?=\d)", r"e\1", text)
        return "1/" + text if way == "inverse" else text


def prose(template, limits):
    """A mechanism template formatted with a cause's limits ({"doctor": {...}, "check": {...}})."""
    return _Prose().format(template, doctor=limits.get("doctor", {}), check=limits.get("check", {}))


TEMPLATES = {cid: c.mechanism for cid, c in ALL.items()}  # the mechanisms as written, before their limits
ALL = {
    cid: replace(c, limits=_LIMITS.get(cid, {}), mechanism=prose(c.mechanism, _LIMITS.get(cid, {})))
    for cid, c in ALL.items()
}
CAUSES = {cid: c for cid, c in ALL.items() if c.question}  # the menu a learner states a diagnosis from


def get(cause):
    """The menu cause with this id (a clear error naming the known ones otherwise)."""
    try:
        return CAUSES[cause]
    except KeyError:
        raise KeyError(f"no cause id {cause!r}; the doctor's ids: {', '.join(CAUSES)}") from None


def limit(cause, who):
    """The named thresholds of `who` ("doctor" or "check") for cause."""
    return ALL[cause].limits[who]


def menu():
    """[(category, [Cause, ...])] in checklist order: what a diagnosis is chosen from."""
    return [
        (category, group)
        for category in CATEGORIES
        if (group := [c for c in CAUSES.values() if c.category == category])
    ]


def match(text):
    """The cause ids a free-text diagnosis names (`trainlab.doctor.phrases`: ids written out, and
    each cause's concepts met in a sentence that does not dismiss them). Several causes may match
    (a two-bug diagnosis); none is a clear error."""
    from trainlab.doctor import phrases

    found = phrases.read(text)
    if not found:
        raise ValueError(
            f"no cause matches {text!r}: tick the causes in the form, or pass their ids (causes=[...]; "
            "every id is in trainlab.doctor.causes.CAUSES)"
        )
    return found
