"""Plots of a training run and of the data: the live dashboard, image grids, a batch browser.

    dashboard = LiveDashboard()
    record = train(cfg, callback=dashboard)   # redraws at every log point
    dashboard.close()                         # leaves the final figure as a static image

The dashboard redraws one matplotlib figure in place through a display handle, so it is
live in JupyterLab and, executed headless by papermill, leaves the last frame as an image.
Used by notebook 00 and every module's training runs.
"""

import time

import matplotlib.pyplot as plt
import numpy as np

from trainlab.workbook.display import in_ipython, show


def _display(obj, **kwargs):
    """Display obj in a notebook; outside one (a script, a test) figures are not printed."""
    return show(obj, **kwargs) if in_ipython() else None


def plot_run(record, fig=None):
    """Loss, accuracy, learning rate and gradient norm of a RunRecord on a 2x2 figure."""
    fig = fig or plt.figure(figsize=(10, 6))
    fig.clf()
    (ax_loss, ax_acc), (ax_lr, ax_norm) = fig.subplots(2, 2)
    steps = np.arange(1, len(record.loss) + 1)
    ax_loss.plot(steps, record.loss, lw=0.8, alpha=0.5, label="per step")
    if len(record.loss) >= 10:
        k = max(len(record.loss) // 20, 2)
        smooth = np.convolve(record.loss, np.ones(k) / k, mode="valid")
        ax_loss.plot(steps[k - 1 :], smooth, lw=1.5, label=f"mean of {k}")
    ax_loss.axhline(np.log(10), color="grey", ls=":", lw=1, label="ln 10 (chance)")
    ax_loss.set(title="training loss", xlabel="step")
    ax_loss.legend(fontsize=7)
    epochs = np.arange(1, len(record.test_accuracy) + 1)
    planned = max(record.config.get("epochs") or 0, len(epochs), 1)
    ax_acc.plot(epochs, record.train_accuracy[: len(epochs)], "o-", label="train")
    ax_acc.plot(epochs, record.test_accuracy, "s-", label="test")
    ax_acc.axhline(0.1, color="grey", ls=":", lw=1, label="chance")
    ax_acc.set(
        title="accuracy (at the end of each epoch)",
        xlabel="epoch",
        ylim=(0, 1),
        xlim=(0.5, planned + 0.5),
        xticks=range(1, planned + 1),
    )
    if not len(epochs):  # nothing to draw until the first epoch ends: say so rather than show empty axes
        ax_acc.text(
            0.5,
            0.5,
            "measured when the first epoch ends",
            transform=ax_acc.transAxes,
            ha="center",
            va="center",
            fontsize=9,
            color="grey",
        )
    ax_acc.legend(fontsize=7)
    ax_lr.plot(np.arange(1, len(record.lr) + 1), record.lr)
    ax_lr.set(title="learning rate", xlabel="step")
    ax_norm.plot(np.arange(1, len(record.grad_norm) + 1), record.grad_norm, lw=0.8)
    ax_norm.set(title="gradient norm", xlabel="step", yscale="log" if record.grad_norm else "linear")
    fig.suptitle(
        record.summary() if record.wall_s else f"{record.model} on {record.data_source}: training...", fontsize=9
    )
    fig.tight_layout()
    return fig


_now = time.perf_counter  # the dashboard's clock (a test replaces it)


class LiveDashboard:
    """A RunRecord callback that redraws loss/accuracy/LR/gradient-norm plots in place. A redraw runs on the
    training's own thread, so they are spaced by at least DRAW_SHARE_INVERSE times the last one's duration: the
    plots never take more than about a sixth of the run, however slow drawing is on a busy machine."""

    DRAW_SHARE_INVERSE = 5

    def __init__(self, min_interval_s=1.0):
        self.min_interval_s = min_interval_s
        self.fig = plt.figure(figsize=(10, 6))
        plt.close(self.fig)  # we display it ourselves; keeps the inline backend from a duplicate
        self.handle = None
        self.record = None
        self._last, self._took = 0.0, 0.0
        self.draws, self.draw_s = 0, 0.0  # how many redraws, and their seconds in all

    def __call__(self, record):
        self.record = record
        if _now() - self._last >= max(self.min_interval_s, self.DRAW_SHARE_INVERSE * self._took):
            self._draw()

    def _draw(self):
        start = _now()
        plot_run(self.record, self.fig)
        if self.handle is None:
            self.handle = _display(self.fig, display_id=True)
        else:
            self.handle.update(self.fig)
        self._last = _now()
        self._took = self._last - start
        self.draws, self.draw_s = self.draws + 1, self.draw_s + self._took

    def close(self, record=None):
        """Draw the final state (call after train() returns, with its record)."""
        self.record = record or self.record
        if self.record is not None:
            self._draw()
        return self.fig


def show_batch(images, labels, classes, n=32, mean=None, std=None, title=""):
    """Grid of n images with their labels; images are uint8 or normalised float (B, 3, H, W)."""
    x = images[:n].detach().float().cpu()
    if mean is not None:  # undo normalisation for display
        x = x * np.array(std).reshape(1, 3, 1, 1) + np.array(mean).reshape(1, 3, 1, 1)
    elif not images.dtype.is_floating_point:
        x = x / 255
    x = x.clamp(0, 1).permute(0, 2, 3, 1).numpy()
    cols = min(8, len(x))
    rows = -(-len(x) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(1.3 * cols, 1.45 * rows), squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    for ax, img, label in zip(axes.flat, x, labels[:n].tolist()):
        ax.imshow(img)
        ax.set_title(classes[label], fontsize=8)
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def batch_browser(image_set, n=16):
    """A slider over the training set, n images a page, with their labels.

    Each page is drawn to a PNG shown by an Image widget: no Output-widget capture, which
    once left a headless (papermill) run waiting 600 s for a message that never came."""
    import io

    import ipywidgets as widgets

    pages = len(image_set.train_y) // n

    def png(index):
        sl = slice(index * n, (index + 1) * n)
        fig = show_batch(image_set.train_x[sl], image_set.train_y[sl], image_set.classes, n=n)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", bbox_inches="tight")
        plt.close(fig)
        return buffer.getvalue()

    slider = widgets.IntSlider(0, 0, pages - 1, description="page")
    image = widgets.Image(value=png(0), format="png")
    slider.observe(lambda change: setattr(image, "value", png(change["new"])), names="value")
    browser = widgets.VBox([slider, image])
    _display(browser)
    return browser


SPLIT_COLORS = {
    "compute": "tab:blue",
    "communication": "tab:purple",
    "data": "tab:orange",
    "sync": "tab:red",
    "idle": "tab:gray",
}


def plot_step_split(rows, title="where a step's time goes", unit="ms per step", ax=None):
    """rows: {label: {category: value}} in trainlab.measurement.timeline's categories; stacked bars, one per label,
    the legend beside the bars (never over one)."""
    if ax is None:
        _, ax = plt.subplots(figsize=(9, 1.2 + 0.45 * len(rows)))
    labels = list(rows)[::-1]  # the first row on top
    left = np.zeros(len(labels))
    for part, color in SPLIT_COLORS.items():
        values = np.array([rows[label].get(part, 0.0) for label in labels])
        if values.any():
            ax.barh(labels, values, left=left, color=color, label=part)
            left += values
    ax.set(xlabel=unit, title=title)
    ax.tick_params(axis="y", labelsize=8)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.figure.tight_layout()
    return ax.figure
