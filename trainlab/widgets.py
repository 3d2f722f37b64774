"""The hypothesis panel: try candidate fixes on a lab one change at a time, and compare.

    panel = HypothesisPanel("nc_two_bugs")
    panel                      # JupyterLab: a toggle per candidate fix, a Train button, curves
    panel.run(["lower the learning rate 10x"])   # the same from code (headless notebooks)

Candidate fixes are the lab's own fixes (from its file in labs/) plus the usual suspects a
learner reaches for first (lower the learning rate, clip gradients). Each run goes through
the checks' child runner for the same bounded number of steps, so the curves compare like
with like; every run stays on the plot, labelled by the changes it had. Used in notebook 01.
"""

import re

import matplotlib.pyplot as plt

from trainlab import labs
from trainlab.checks.core import run_variants


def lower_lr(src):
    """The script with its first learning rate divided by 10."""
    return re.sub(r"lr=([0-9.e-]+)", lambda m: f"lr={float(m.group(1)) / 10:g}", src, count=1)


def clip_gradients(src):
    """The script with gradient clipping at norm 1 before optimizer.step()."""
    return re.sub(r"^(\s*)optimizer\.step\(\)",
                  r"\1torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n\1optimizer.step()", src, count=1, flags=re.M)


GENERIC = {"lower the learning rate 10x": lower_lr, "clip gradients at norm 1": clip_gradients}


class HypothesisPanel:
    def __init__(self, lab, max_steps=120, device="cpu"):
        self.lab, self.max_steps, self.device = lab, max_steps, device
        self.lab_fixes = [f"fix: {text.split('#')[0].strip()}" for text in labs.fix_groups(lab)]
        self.candidates = [*self.lab_fixes, *GENERIC]
        self.runs = {}  # label -> report
        self.fig = plt.figure(figsize=(10, 3.6))
        plt.close(self.fig)
        self._widget = None

    def source(self, changes):
        groups = {i for i, name in enumerate(self.lab_fixes) if name in changes}
        text = labs.source(self.lab, fixed=groups)
        for name in changes:
            if name in GENERIC:
                text = GENERIC[name](text)
        return text

    def run(self, changes=()):
        """Train the lab with these changes (names from .candidates); return the report."""
        unknown = set(changes) - set(self.candidates)
        if unknown:
            raise ValueError(f"unknown change(s) {sorted(unknown)}; choose from {self.candidates}")
        label = " + ".join(changes) or "as shipped"
        variant = {"name": label, "source": self.source(changes), "max_steps": self.max_steps}
        self.runs[label] = run_variants([variant], self.device, timeout=120)[label]
        self.draw()
        return self.runs[label]

    def draw(self):
        self.fig.clf()
        ax_loss, ax_acc = self.fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
        names, accs = [], []
        for label, report in self.runs.items():
            losses = [v if isinstance(v, float) else float("nan") for v in report.get("losses", [])]
            ax_loss.plot(range(1, len(losses) + 1), losses, lw=1, label=label)
            names.append(label if len(label) < 40 else label[:37] + "...")
            accs.append(report.get("accuracy") or 0.0)
        ax_loss.set(title=f"{self.lab}: training loss", xlabel="step", yscale="log")
        ax_loss.legend(fontsize=7)
        ax_acc.barh(names, accs, color="tab:blue")
        ax_acc.axvline(0.1, color="grey", ls=":", lw=1)
        ax_acc.set(title="held-out accuracy", xlim=(0, 1))
        ax_acc.tick_params(axis="y", labelsize=7)
        self.fig.tight_layout()
        if self._widget is not None:
            with self._widget["plot"]:
                self._widget["plot"].clear_output(wait=True)
                from IPython.display import display

                display(self.fig)
        return self.fig

    def _ipython_display_(self):
        import ipywidgets as w
        from IPython.display import display

        toggles = [w.ToggleButton(description=c[:38], tooltip=c, layout=w.Layout(width="auto")) for c in self.candidates]
        button, status, plot = w.Button(description="Train", button_style="primary"), w.Label(), w.Output()
        self._widget = {"plot": plot}

        def on_click(_):
            chosen = [c for c, t in zip(self.candidates, toggles) if t.value]
            status.value = f"training with: {', '.join(chosen) or 'no change'}..."
            report = self.run(chosen)
            acc = report.get("accuracy")
            status.value = f"done: accuracy {acc:.1%}" if acc is not None else f"done: {report.get('error', '')}"

        button.on_click(on_click)
        display(w.VBox([w.HBox(toggles, layout=w.Layout(flex_flow="row wrap")), w.HBox([button, status]), plot]))
        if self.runs:
            self.draw()
