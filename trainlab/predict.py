"""Predict, then measure: the learner commits to a number before the notebook shows it.

    guess = predict.ask("sparse-crossover", "Up to which density does all-gather beat dense?",
                        unit="%", given=predicted_crossover)    # a papermill parameter, None by default
    display(guess)                                              # JupyterLab: a number box and Submit
    ...                                                         # measure
    guess.reveal(measured, then=show_the_table)                 # later cell

`reveal` shows the prediction, the measured value and the error once a prediction exists; until
then it shows neither the value nor what `then` displays (the table or plot that contains it):
both appear under the widget when the learner submits. Headless runs pass the prediction as a
papermill parameter (`given=`); with none, the measured value stays out of the output.
"""

import math

from trainlab.display import say

PREDICTIONS = {}  # key -> Prediction, for this kernel


class Prediction:
    def __init__(self, key, question, unit="", given=None):
        self.key, self.question, self.unit = key, question, unit
        self.value = None if given is None else float(given)
        self.measured, self._then, self._area = None, None, None

    def __repr__(self):  # headless: the question, and the prediction if one was given
        said = f"your prediction: {self.value:g} {self.unit}" if self.value is not None else "no prediction yet"
        return f"Predict: {self.question} ({said})"

    def submit(self, value):
        """Record the prediction; if the measurement is already in, show both."""
        if value is None or not math.isfinite(float(value)):
            raise ValueError(f"a prediction for {self.key!r} must be a finite number, not {value!r}")
        self.value = float(value)
        if self.measured is not None:
            self._show(inside=self._area)

    def reveal(self, measured, then=None):
        """The measurement, shown next to the prediction - or held until one is submitted."""
        self.measured, self._then = float(measured), then
        if self.value is not None:
            self._show()
        else:
            say(f"*Submit your prediction for \"{self.question}\" above: the measured value appears there.*")

    def error(self):
        return (self.value - self.measured) / self.measured if self.measured else math.inf

    def comparison(self):
        return (f"**{self.question}** You predicted {self.value:.3g} {self.unit}; measured here: "
                f"{self.measured:.3g} {self.unit} ({self.error():+.0%}).")

    def _show(self, inside=None):
        def render():
            say(self.comparison())
            if self._then is not None:
                self._then()
        if inside is None:
            render()
        else:
            with inside:
                render()

    def _ipython_display_(self):
        import ipywidgets as w
        from IPython.display import display

        box = w.FloatText(value=self.value or 0.0, description=self.unit or "value", layout=w.Layout(width="220px"))
        button, self._area = w.Button(description="Submit", button_style="primary"), w.Output()

        def on_click(_):
            self.submit(box.value)

        button.on_click(on_click)
        display(w.VBox([w.HTML(f"<b>Predict:</b> {self.question}"), w.HBox([box, button]), self._area]))


def ask(key, question, unit="", given=None):
    """A Prediction (kept by key for this kernel); display it to show the input widget."""
    PREDICTIONS[key] = Prediction(key, question, unit, given)
    return PREDICTIONS[key]
