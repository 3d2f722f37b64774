"""The hypothesis panel: try candidate fixes on a lab one change at a time, and compare.

    panel = HypothesisPanel("debugging/nc_7")
    panel                      # JupyterLab: a toggle per candidate fix, a Train button, curves
    panel.run(["lower the learning rate 10x"])   # the same from code (headless notebooks)

Candidates are hypotheses, labelled by the question they test (from the doctor's cause list,
`trainlab.doctor.causes`), never by code: the lab's own causes (toggling one applies that fix
from its file in labs/, unseen) mixed with the usual suspects a learner reaches for first
(is the learning rate too high? do gradients explode?). Each run goes
through the measuring child (`trainlab.measure`) for the same bounded number of steps, so the
curves compare like with like; every run stays on the plot, labelled by the changes it had.
In JupyterLab the loss, batch-accuracy and gradient-norm curves are redrawn while a run
trains. Used in notebook 01.
"""

import textwrap

import matplotlib.pyplot as plt

from trainlab import labs
from trainlab.checks import diagnosis
from trainlab.checks.corpus import clip_gradients, lower_lr
from trainlab.display import show, show_widget
from trainlab.doctor.causes import CAUSES
from trainlab.measure import run_variants

GENERIC = {"is the learning rate too high? (try it 10x lower)": lower_lr,
           "do exploding gradients stop it? (clip at norm 1)": clip_gradients(1.0)}


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
        self._fix_of = {f"{CAUSES[name].question} (apply its fix)": name for name in labs.fixes(lab)}
        self.lab_fixes = list(self._fix_of)  # the lab's own hypotheses, by the question each tests
        self.candidates = sorted([*self.lab_fixes, *GENERIC])  # mixed: the order gives nothing away
        self.runs = {}  # label -> report
        self.fig = plt.figure(figsize=(14, 3.6))
        plt.close(self.fig)
        self._widget = None

    def source(self, changes):
        text = labs.source(self.lab, fixed={self._fix_of[c] for c in changes if c in self._fix_of})
        for name in changes:
            if name in GENERIC:
                text = GENERIC[name](text)
        return text

    def run(self, changes=(), live=None):
        """Train the lab with these changes (names from .candidates); return the report.
        In the widget the curves are redrawn while it trains (live=True)."""
        unknown = set(changes) - set(self.candidates)
        if unknown:
            raise ValueError(f"unknown change(s) {sorted(unknown)}; choose from {self.candidates}")
        if any(c in self._fix_of for c in changes):  # applying the lab's own fix is help, like a hint
            diagnosis.used_help(self.lab, "panel")
        label = " + ".join(changes) or "as shipped"
        variant = {"name": label, "source": self.source(changes), "max_steps": self.max_steps, "curves": True}
        live = self._widget is not None if live is None else live
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
        axes[2].legend(fontsize=7, title="change (held-out accuracy)", title_fontsize=7, loc="upper left",
                       bbox_to_anchor=(1.02, 1.0))
        self.fig.tight_layout()
        if self._widget is not None:
            with self._widget["plot"]:
                self._widget["plot"].clear_output(wait=True)
                show(self.fig)
        return self.fig

    def _ipython_display_(self):
        import ipywidgets as w

        toggles = [w.ToggleButton(description=c, tooltip=c, layout=w.Layout(width="auto")) for c in self.candidates]
        button, status, plot = w.Button(description="Train", button_style="primary"), w.Label(), w.Output()
        self._widget = {"plot": plot}

        def on_click(_):
            chosen = [c for c, t in zip(self.candidates, toggles) if t.value]
            status.value = f"training with: {', '.join(chosen) or 'no change'}..."
            report = self.run(chosen)
            acc = report.get("accuracy")
            status.value = f"done: accuracy {acc:.1%}" if acc is not None else f"done: {report.get('error', '')}"

        button.on_click(on_click)
        show_widget(w.VBox([w.HBox(toggles, layout=w.Layout(flex_flow="row wrap")), w.HBox([button, status]), plot]),
                    f"Hypothesis panel for {self.lab}: toggle hypotheses and press Train in JupyterLab")
        if self.runs:
            self.draw()
