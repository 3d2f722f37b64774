"""The hypothesis panel: change a lab one thing at a time, train, and compare the curves.

    panel = HypothesisPanel("debugging/nc_7")
    panel                      # JupyterLab: a toggle per change, a Train button, the curves
    panel.run(["lower the learning rate 10x"])   # the same from code (headless notebooks)

The panel offers the changes an engineer tries by hand when a run misbehaves - lower or raise the
learning rate, clip the gradients, turn weight decay or the LR schedule off - each a plain edit of
the script's own text (`trainlab.checks.corpus`), offered wherever the script has the line it edits.
None of them reads the lab's fix: they are experiments, not answers, and several are the symptom
masks a check rejects - seeing one move the curves says where to look, never that it is the fix.
Each run goes through the measuring child (`trainlab.checks.measure`) for the same bounded number of
steps, so the curves compare like with like; every run stays on the plot, labelled by its changes.
The figure is one output, redrawn in place while a run trains. Used in notebook 01.
"""

import textwrap

import matplotlib.pyplot as plt

from trainlab.workbook import labs
from trainlab.checks.corpus import EditError, clip_gradients, lower_lr, no_lr_schedule, no_weight_decay
from trainlab.workbook.display import in_ipython, show, show_widget
from trainlab.checks.measure import run_variants

CHANGES = {
    "lower the learning rate 10x": lower_lr,
    "raise the learning rate 10x": lambda text: lower_lr(text, factor=0.1),
    "clip gradients at norm 1": clip_gradients(1.0),
    "turn weight decay off": no_weight_decay,
    "turn the learning-rate schedule off": no_lr_schedule,
}


def _smooth(values, window=10):
    """Trailing mean: batch accuracy is noisy step to step."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v - (values[i - window] if i >= window else 0.0)
        out.append(total / min(i + 1, window))
    return out


class HypothesisPanel:
    def __init__(self, lab, max_steps=120, device="cpu"):
        self.lab, self.max_steps, self.device = lab, max_steps, device
        self.candidates = [name for name, edit in CHANGES.items() if _applies(edit, labs.source(lab))]
        self.runs = {}  # label -> report
        self.fig = plt.figure(figsize=(14, 3.6))
        plt.close(self.fig)
        self._handle = None  # the figure's display: redrawn in place
        self._widget = False

    def source(self, changes):
        text = labs.source(self.lab)
        for name in changes:
            text = CHANGES[name](text)
        return text

    def run(self, changes=(), live=None):
        """Train the lab with these changes (labels from .candidates); return the report.
        In the widget the curves are redrawn while it trains (live=True)."""
        unknown = set(changes) - set(self.candidates)
        if unknown:
            raise ValueError(f"unknown change(s) {sorted(unknown)}; choose from {self.candidates}")
        label = " + ".join(changes) or "as shipped"
        variant = {"name": label, "source": self.source(changes), "max_steps": self.max_steps, "curves": True}
        live = self._widget if live is None else live
        on_progress = (lambda curves: self.draw(in_flight=(label, curves))) if live else None
        self.runs[label] = run_variants([variant], self.device, timeout=120, on_progress=on_progress)[label]
        self.draw()
        return self.runs[label]

    def draw(self, in_flight=None):
        """Loss, batch accuracy and gradient norm per step for every run so far (and the one
        training now, dashed); the held-out accuracy of each finished run in its label."""
        self.fig.clf()
        axes = self.fig.subplots(1, 3)
        curves = [(label, report, "-") for label, report in self.runs.items()]
        if in_flight:
            curves.append((in_flight[0] + " (training...)", in_flight[1], "--"))
        for number, (label, report, style) in enumerate(curves, 1):
            acc = report.get("accuracy")
            name = textwrap.fill(f"{number}. {label}" + (f" ({acc:.0%})" if acc is not None else ""), 48)
            for ax, key in zip(axes, ("losses", "batch_accs", "grad_norms")):
                values = [v if isinstance(v, float) else float("nan") for v in report.get(key, [])]
                if key == "batch_accs":
                    values = _smooth(values)
                ax.plot(range(1, len(values) + 1), values, style, lw=1, label=name)
        axes[0].set(title=f"{self.lab}: training loss", xlabel="step", yscale="log")
        axes[1].set(title="batch accuracy (smoothed)", xlabel="step", ylim=(0, 1))
        axes[1].axhline(0.1, color="grey", ls=":", lw=1)
        axes[2].set(title="gradient norm", xlabel="step", yscale="log")
        if curves:  # nothing trained yet: no legend to draw
            axes[2].legend(
                fontsize=7,
                title="change (held-out accuracy)",
                title_fontsize=7,
                loc="upper left",
                bbox_to_anchor=(1.02, 1.0),
            )
        self.fig.tight_layout()
        if self._handle is not None:
            self._handle.update(self.fig)
        return self.fig

    def __repr__(self):
        return f"Hypothesis panel for {self.lab}: in JupyterLab, a toggle for each of: " + "; ".join(self.candidates)

    def _ipython_display_(self):
        import ipywidgets as w

        toggles = {c: w.ToggleButton(description=c, tooltip=c, layout=w.Layout(width="auto")) for c in self.candidates}
        button, status = w.Button(description="Train", button_style="primary"), w.Label()
        self._widget = True

        def on_click(_):
            chosen = [c for c, t in toggles.items() if t.value]
            status.value = f"training with: {', '.join(chosen) or 'no change'}..."
            report = self.run(chosen)
            acc = report.get("accuracy")
            status.value = f"done: accuracy {acc:.1%}" if acc is not None else f"done: {report.get('error', '')}"

        button.on_click(on_click)
        show_widget(
            w.VBox([w.HBox(list(toggles.values()), layout=w.Layout(flex_flow="row wrap")), w.HBox([button, status])]),
            repr(self),
        )
        self.draw()
        if in_ipython():  # the one figure, redrawn in place by every run
            self._handle = show(self.fig, display_id=True)


def _applies(edit, text):
    try:
        edit(text)
    except EditError:
        return False
    return True
