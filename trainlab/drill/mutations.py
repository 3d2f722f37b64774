"""The bugs a drill can plant: one mutation per cause id, written as a syntax-tree edit.

Each entry is data - the doctor's cause id, the symptom the bug shows, whether it only changes
a constant, and what it does (shown with the solution, never before) - plus the edit, which
finds its anchors by structure (`trainlab.drill.edit`) so it applies to any healthy script
written in the usual shapes, and raises NotApplicable where a script has nothing to break.
The code an edit writes reads like the script around it: no comments, no telling names.
"""

import ast
from dataclasses import dataclass

from trainlab.doctor.causes import CAUSES
from trainlab.drill.edit import NotApplicable, Script, _name


@dataclass(frozen=True)
class Mutation:
    cause: str  # the doctor's cause id (trainlab/doctor/causes.py)
    symptom: str  # no-convergence, nan, slow or memory: what the broken script shows
    explanation: str  # what the bug is and why it shows (only with the solution)
    edit: object  # Script -> None, editing it in place; raises NotApplicable
    constant_only: bool = False  # changes a number and nothing else

    @property
    def category(self):
        return CAUSES[self.cause].category

    def apply(self, text):
        script = Script(text)
        try:
            self.edit(script)
        except (SyntaxError, ValueError, ZeroDivisionError) as exc:  # a script shaped unlike the edit expects
            raise NotApplicable(f"{self.cause}: {type(exc).__name__}: {exc}") from None
        script.prune_unused(text)
        if script.text == text:
            raise NotApplicable(f"{self.cause}: the edit changed nothing")
        return script.text


# ---------------------------------------------------------------- anchors shared by the edits
def _module_assignment(script, name):
    """`name = ...` at module level (where the model comes into being, say)."""
    for node in script.tree.body:
        if isinstance(node, ast.Assign) and [_name(t) for t in node.targets] == [name]:
            return node
    raise NotApplicable(f"no module-level `{name} = ...`")


def _model_assignment(script):
    return _module_assignment(script, "model")


def _optimizer(script):
    calls = [
        c for c in script.calls("") if _name(c.func).startswith("torch.optim.") and "lr_scheduler" not in _name(c.func)
    ]
    if not calls:
        raise NotApplicable("no torch.optim optimizer")
    return calls[0]


def _loss_call(script):
    """The training loss call `loss = <loss function>(outputs, targets)` in the training loop."""
    loop = script.training_loop()
    for node in ast.walk(loop):
        if (
            isinstance(node, ast.Assign)
            and [_name(t) for t in node.targets] == ["loss"]
            and isinstance(node.value, ast.Call)
        ):
            return node, node.value
    raise NotApplicable("no `loss = f(outputs, targets)` in the training loop")


def _forward_call(script):
    """The model's forward call inside the training step: `model(x)` or `self.model(x)`."""
    loop = script.training_loop()
    for node in ast.walk(loop):
        if isinstance(node, ast.Call) and _name(node.func).split(".")[-1] == "model" and len(node.args) == 1:
            return node
    raise NotApplicable("no model(x) call in the training loop")


def _batch_names(script):
    """('x', 'y', loader expression) of `for step, (x, y) in enumerate(loader):`."""
    loop = script.training_loop()
    target, it = loop.target, loop.iter
    if (
        isinstance(target, ast.Tuple)
        and len(target.elts) == 2
        and isinstance(target.elts[1], ast.Tuple)
        and isinstance(it, ast.Call)
        and _name(it.func) == "enumerate"
    ):
        x, y = (_name(e) for e in target.elts[1].elts)
        return loop, x, y, script.segment(it.args[0])
    raise NotApplicable("the training loop is not `for step, (x, y) in enumerate(loader)`")


def _train_loader_call(script):
    """The call that builds the training batches: `DataLoader(...)` / `DeviceLoader(...)` assigned to train_loader."""
    node = script.assignment("train_loader")
    if not isinstance(node.value, ast.Call):
        raise NotApplicable("train_loader is not built by a call")
    return node, node.value


def _scale_keyword(script, call, name, factor):
    keyword = script.keyword(call, name)
    try:
        value = ast.literal_eval(keyword.value)
    except ValueError:
        raise NotApplicable(f"{name}= is not a number") from None
    if not value:
        raise NotApplicable(f"{name}=0 cannot be scaled")
    script.replace(keyword.value, f"{value * factor:g}")


# ---------------------------------------------------------------- the edits
def remove_zero_grad(script):
    script.delete(script.call_statement("zero_grad"))


def remove_step(script):
    script.delete(script.call_statement("step", receiver="optim"))


def zero_grad_after_backward(script):
    script.move_after(script.call_statement("zero_grad"), script.call_statement("backward"))


def zero_init(script):
    script.insert_after(_model_assignment(script), "for p in model.parameters():\n    nn.init.zeros_(p)")


def dead_relus(script):
    if "ReLU" not in script.text:
        raise NotApplicable("no ReLU")
    script.insert_after(
        _model_assignment(script),
        "for m in model.modules():\n"
        "    if isinstance(m, (nn.Linear, nn.BatchNorm2d)) and m.bias is not None:\n"
        "        nn.init.constant_(m.bias, -5.0)",
    )


def softmax_into_loss(script):
    _, call = _loss_call(script)
    if not call.args:
        raise NotApplicable("the loss call has no positional outputs")
    outputs = call.args[0]
    script.replace(outputs, f"{script.segment(outputs)}.softmax(dim=1)")


def unstable_kl_loss(script):
    """A hand-written soft cross-entropy in place of the library's, wherever the script names its loss."""
    _, call = _loss_call(script)
    if len(call.args) != 2:
        raise NotApplicable("the loss call does not take (outputs, targets)")
    modules = script.calls("CrossEntropyLoss")
    if modules:  # `loss_fn = nn.CrossEntropyLoss()` or a module handed to a trainer: the function takes its place
        script.replace(modules[0], "soft_cross_entropy")
    elif _name(call.func).endswith("cross_entropy"):
        script.replace(call.func, "soft_cross_entropy")
    else:
        raise NotApplicable("no cross-entropy to replace")
    first_def = next((n for n in script.tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))), None)
    helper = (
        "def soft_cross_entropy(logits, target):\n"
        "    p = torch.softmax(logits, dim=1)\n"
        "    t = nn.functional.one_hot(target, p.shape[1]).float()\n"
        "    return (t * torch.log(t / p)).sum(dim=1).mean()\n"
    )
    if first_def is not None:
        script.insert_before(first_def, helper + "\n\n")
    else:
        script.insert_before(_first_code(script), "\n" + helper + "\n\n")


def _first_code(script):
    return next(n for n in script.tree.body if not isinstance(n, (ast.Import, ast.ImportFrom, ast.Expr)))


def lr_times_100(script):
    _scale_keyword(script, _optimizer(script), "lr", 100)


def weight_decay_shrinks_ten_percent(script):
    """A weight decay that takes 10% off every weight each step (lr x weight_decay = 0.1)."""
    optimizer = _optimizer(script)
    lr = ast.literal_eval(script.keyword(optimizer, "lr").value)
    script.replace(script.keyword(optimizer, "weight_decay").value, f"{0.1 / lr:g}")  # only where one is set


def scheduler_per_batch(script):
    scheduler = script.call_statement("step", receiver="scheduler")
    step = script.call_statement("step", receiver="optim")
    name = _name(scheduler.value.func.value)
    if "lr_scheduler.CosineAnnealing" in script.text:
        raise NotApplicable("a cosine schedule stepped per batch cycles rather than collapses")
    _module_assignment(script, name)  # a module-level name the training step can reach
    script.move_after(scheduler, step)


def rebuild_model_after_optimizer(script):
    model = _model_assignment(script)
    optimizer = script.statement_of(_optimizer(script))
    if optimizer.lineno < model.lineno or optimizer not in script.tree.body:
        raise NotApplicable("the optimizer is not built after the model at module level")
    script.insert_after(optimizer, script.segment(model))


def shuffled_labels(script):
    statement = script.statement_of(script.attribute("images.train_y"))
    script.insert_before(statement, "labels = images.train_y[torch.randperm(len(images.train_y))]")
    script.replace(script.attribute("images.train_y", after=statement.lineno), "labels")  # below the new line


def sorted_unshuffled(script):
    statement, loader = _train_loader_call(script)
    names = {_name(k.value) for k in loader.keywords} | {_name(a) for a in loader.args}
    if "shuffle" in {k.arg for k in loader.keywords}:
        script.replace(script.keyword(loader, "shuffle").value, "False")
    elif "RandomSampler" in script.text:
        script.text = script.text.replace("RandomSampler", "SequentialSampler")
        script.tree = ast.parse(script.text)
    elif _name(loader.func) == "DeviceLoader" and any(k.arg is None for k in loader.keywords):
        stars = next(k for k in loader.keywords if k.arg is None)  # `**stats`: the flag goes before it
        script.replace(stars, f"train=False, {script.segment(stars)}")
    else:
        raise NotApplicable(f"cannot turn off shuffling in {names}")
    first = min(
        (script.statement_of(script.attribute(a)) for a in ("images.train_x", "images.train_y")), key=lambda n: n.lineno
    )
    script.insert_before(
        first,
        "order = images.train_y.argsort()\ntrain_images, train_labels = images.train_x[order], images.train_y[order]",
    )
    for attr, name in (("images.train_x", "train_images"), ("images.train_y", "train_labels")):
        script.replace(script.attribute(attr, after=first.lineno + 1), name)  # the two new lines keep theirs


def one_batch_repeated(script):
    loop, x, y, loader = _batch_names(script)
    script.insert_before(loop, f"{x}, {y} = next(iter({loader}))")
    loop = script.training_loop()
    script.replace(loop.iter, f"range(len({loader}))")
    loop = script.training_loop()
    script.replace(loop.target, "step")


def per_sample_loader(script):
    statement, loader = _train_loader_call(script)
    kinds = {k.arg for k in loader.keywords}
    if "num_workers" in kinds:  # the tutorial's path already: run its transforms in this process
        script.replace(script.keyword(loader, "num_workers").value, "0")
        statement, loader = _train_loader_call(script)
        if "persistent_workers" in {k.arg for k in loader.keywords}:
            text = script.segment(loader)
            script.replace(loader, text.replace(", persistent_workers=True", ""))
        return
    batch = _batch_size(script, loader)
    script.replace(statement.value, f"DataLoader(train_set, batch_size={batch}, shuffle=True)")
    dataset = "ImageDataset(images.train_x, images.train_y, standard_transform(images.mean, images.std, train=True))"
    try:  # the script's own training set becomes the per-sample one
        script.replace(script.assignment("train_set").value, dataset)
    except NotApplicable:
        script.insert_before(script.assignment("train_loader"), f"train_set = {dataset}")
    for name in ("ImageDataset", "standard_transform"):
        script.add_import("trainlab.data", name)
    script.add_import("torch.utils.data", "DataLoader")
    while True:  # a DataLoader has no set_epoch (it reshuffles by itself)
        try:
            script.delete(script.call_statement("set_epoch"))
        except NotApplicable:
            break
    _inputs_to_device(script)


def _batch_size(script, loader):
    for call in [loader, *script.calls("BatchSampler")]:
        for keyword in call.keywords:
            if keyword.arg == "batch_size" and isinstance(keyword.value, ast.Constant) and keyword.value.value:
                return keyword.value.value
    raise NotApplicable("no batch size to keep")


def _inputs_to_device(script):
    loop, x, y, _ = _batch_names(script)
    if ".to(" not in "\n".join(script.segment_lines(loop)):
        script.insert_before(loop.body[0], f"{x}, {y} = {x}.to(device), {y}.to(device)")


def per_sample_accuracy(script):
    _, call = _loss_call(script)
    loop, x, y, _ = _batch_names(script)
    forward = _forward_call(script)
    if script.segment(forward) in script.segment(call):  # `loss_fn(model(x), y)`: name the outputs first
        outputs = script.segment(forward)
        script.replace(forward, "outputs")
        script.insert_before(_loss_call(script)[0], f"outputs = {outputs}")
        name = "outputs"
    else:
        name = script.segment(call.args[0]).split(".")[0]
    statement, _ = _loss_call(script)
    script.insert_after(
        statement, f"for i in range(len({y})):\n    correct[int({y}[i])] += int({name}[i].argmax() == {y}[i])"
    )
    script.insert_before(script.training_loop(), "correct = [0] * 10")


def keep_loss_graphs(script):
    backward = script.call_statement("backward")
    receiver = script.segment(backward.value.func.value)
    script.replace(backward.value, f"{receiver}.backward(retain_graph=True)")
    script.insert_after(script.call_statement("backward"), f"history.append({receiver})")
    script.insert_before(script.training_loop(), "history = []")


def _cast_model_and_inputs(script, cast):
    """model.<cast>() after it is built, and every input it is called on cast too (training and evaluation)."""
    _forward_call(script)  # the training step must call it
    while True:
        calls = [
            n
            for n in script.nodes(ast.Call)
            if _name(n.func).split(".")[-1] == "model"
            and len(n.args) == 1
            and not script.segment(n.args[0]).endswith(f".{cast}()")
        ]
        if not calls:
            break
        script.replace(calls[0].args[0], f"{script.segment(calls[0].args[0])}.{cast}()")
    script.insert_after(_model_assignment(script), f"model = model.{cast}()")


def half_weights(script):
    """The whole model in fp16 "to save memory"; where the script used autocast, instead of it."""
    if "AdamW" not in script.text and "Adam(" not in script.text:
        raise NotApplicable("fp16 weights break Adam's eps; SGD is not the bug this drill shows")
    _drop_autocast(script)
    _cast_model_and_inputs(script, "half")


def _is_autocast(item):
    return isinstance(item.context_expr, ast.Call) and _name(item.context_expr.func).endswith("autocast")


def _drop_autocast(script):
    """Remove every `torch.autocast(...)` context: a with that holds only it gives way to its body."""
    while True:
        found = [n for n in script.nodes(ast.With) if any(_is_autocast(i) for i in n.items)]
        if not found:
            return
        node, lines = found[0], script._lines()
        kept = [script.segment(i.context_expr) for i in node.items if not _is_autocast(i)]
        if node.body[0].lineno == node.lineno:
            raise NotApplicable("a one-line with statement")
        if kept:  # the header line only
            new = [f"{' ' * node.col_offset}with {', '.join(kept)}:\n"]
            lines[node.lineno - 1 : node.body[0].lineno - 1] = new
        else:  # the body, one level less indented
            shift = node.body[0].col_offset - node.col_offset
            body = lines[node.body[0].lineno - 1 : node.end_lineno]
            lines[node.lineno - 1 : node.end_lineno] = [line[shift:] if line.strip() else line for line in body]
        script._set(lines)


def double_precision(script):
    if "autocast" in script.text:
        raise NotApplicable("under autocast the layers would not compute in float64")
    _cast_model_and_inputs(script, "double")


def tiny_batches(script):
    _, loader = _train_loader_call(script)
    for call in [*script.calls("BatchSampler"), loader]:
        if "batch_size" in {k.arg for k in call.keywords}:
            keyword = script.keyword(call, "batch_size")
            if isinstance(keyword.value, ast.Constant) and keyword.value.value:
                script.replace(keyword.value, "4")
                return
    raise NotApplicable("no training batch size")


MUTATIONS = {
    m.cause: m
    for m in (
        Mutation(
            "labels-misaligned",
            "no-convergence",
            "the training labels are shuffled on their own, apart from "
            "the images: every image carries another image's label.",
            shuffled_labels,
        ),
        Mutation(
            "batches-of-one-class",
            "no-convergence",
            "the training set is sorted by class and never shuffled: "
            "every batch holds one class, so each step pulls the model towards that class alone.",
            sorted_unshuffled,
        ),
        Mutation(
            "same-batch-every-step",
            "no-convergence",
            "one batch is taken before the loop and trained on at "
            "every step: the model memorises one batch and learns nothing that generalises.",
            one_batch_repeated,
        ),
        Mutation(
            "zero-initialisation",
            "no-convergence",
            "every parameter is set to zero: all units of a layer "
            "compute the same thing and get the same gradient, and zero norm scales output zeros.",
            zero_init,
        ),
        Mutation(
            "dead-units",
            "no-convergence",
            "the biases start at -5, so every ReLU outputs zero for every "
            "input and passes no gradient back: nothing before the last layer can learn.",
            dead_relus,
        ),
        Mutation(
            "softmax-before-cross-entropy",
            "no-convergence",
            "the loss receives probabilities: cross-entropy "
            "applies its own log-softmax, so the gradients shrink and the loss barely moves.",
            softmax_into_loss,
        ),
        Mutation(
            "unstable-loss",
            "nan",
            "a hand-written soft cross-entropy computes t * log(t / p): where t = 0 that is 0 * log(0) = NaN.",
            unstable_kl_loss,
        ),
        Mutation(
            "missing-zero-grad",
            "no-convergence",
            "optimizer.zero_grad() is gone: each step's gradient is the sum of every gradient so far.",
            remove_zero_grad,
        ),
        Mutation(
            "missing-optimizer-step",
            "no-convergence",
            "optimizer.step() is gone: gradients are computed and never applied.",
            remove_step,
        ),
        Mutation(
            "zero-grad-before-step",
            "no-convergence",
            "zero_grad() runs between backward() and step(): the optimizer steps on zero gradients.",
            zero_grad_after_backward,
        ),
        Mutation(
            "lr-schedule-too-fast",
            "no-convergence",
            "the per-epoch scheduler is stepped every batch: the learning rate collapses within the first epoch.",
            scheduler_per_batch,
        ),
        Mutation(
            "params-not-in-optimizer",
            "no-convergence",
            "the model is built a second time after the "
            "optimizer: the optimizer updates the first model's parameters, the loop trains the second.",
            rebuild_model_after_optimizer,
        ),
        Mutation(
            "lr-too-high",
            "no-convergence",
            "the learning rate is 100x the script's working value: the updates "
            "overshoot, and the loss jumps around or diverges.",
            lr_times_100,
            constant_only=True,
        ),
        Mutation(
            "weight-decay-too-high",
            "no-convergence",
            "the weight decay takes 10% off every weight at every "
            "step (lr x weight_decay = 0.1): the weights shrink towards zero faster than the gradients move them.",
            weight_decay_shrinks_ten_percent,
            constant_only=True,
        ),
        Mutation(
            "data-loader-starves",
            "slow",
            "batches are assembled one sample at a time through PIL "
            "transforms in the training process: most of each step waits for the next batch.",
            per_sample_loader,
        ),
        Mutation(
            "host-syncs-in-loop",
            "slow",
            "per-sample accuracy bookkeeping reads two tensor values per "
            "sample: each read is a device synchronisation on a GPU.",
            per_sample_accuracy,
        ),
        Mutation(
            "batch-too-small",
            "slow",
            "batches of 4 images: per-step overheads dominate and the device is "
            "idle most of the time; an epoch takes many times longer.",
            tiny_batches,
            constant_only=True,
        ),
        Mutation(
            "graph-kept-alive",
            "memory",
            "every step's loss tensor is kept with retain_graph=True: each step's "
            "autograd graph stays alive and memory grows every step.",
            keep_loss_graphs,
        ),
        Mutation(
            "fp16-master-weights",
            "nan",
            "the model's weights are cast to fp16: AdamW's eps rounds to 0 and "
            "small gradients underflow, so updates divide 0 by 0.",
            half_weights,
        ),
        Mutation(
            "float64-compute",
            "slow",
            "the model and inputs are cast to float64: every layer runs at "
            "double-precision speed (a fraction of float32's, far less on most GPUs).",
            double_precision,
        ),
    )
}
