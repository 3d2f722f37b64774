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

from trainlab.workbook.display import say, show_widget


class Prediction:
    def __init__(self, key, question, unit="", given=None):
        self.key, self.question, self.unit = key, question, unit
        self.value = None if given is None else float(given)
        self.measured, self._then, self._area, self._later, self._note = None, None, None, [], None

    def __repr__(self):  # headless: the question, and the prediction if one was given
        said = f"your prediction: {self.value:g} {self.unit}" if self.value is not None else "no prediction yet"
        return f"Predict: {self.question} ({said})"

    def submit(self, value):
        """Record the prediction (the first one counts); if the measurement is in, show both."""
        if self.value is not None:
            raise ValueError(
                f"you already predicted {self.value:g} {self.unit}: the first prediction is the one compared"
            )
        try:
            value = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"a prediction for {self.key!r} must be a number, not {value!r}") from None
        if not math.isfinite(value):
            raise ValueError(f"a prediction for {self.key!r} must be a finite number, not {value!r}")
        self.value = value
        if self.measured is not None:
            self._show(inside=self._area)
        for later in self._later:
            self._run(later, inside=self._area)

    def reveal(self, measured, then=None):
        """The measurement, shown next to the prediction - or held until one is submitted."""
        self.measured, self._then = float(measured), then
        if self.value is not None:
            if self._note is not None:  # its "appears when the cell runs" is no longer true
                self._note.value = self._recorded()
            self._show()
        else:
            say(f'*Submit your prediction for "{self.question}" above: the measured value appears there.*')

    def after(self, show):
        """Call show() now if a prediction exists, else once one is submitted: for later cells
        whose output also holds the measured value."""
        if self.value is not None:
            show()
        else:
            self._later.append(show)
            say("*(shown once you submit your prediction above)*")

    def _recorded(self):
        pending = " The measurement appears beside it when the cell that measures it runs."
        return f"Recorded: {self.value:g} {self.unit}." + ("" if self.measured is not None else pending)

    def comparison(self):
        off = (
            f"{(self.value - self.measured) / self.measured:+.0%}"
            if self.measured
            else f"off by {self.value - self.measured:+.3g} {self.unit}"
        )
        return (
            f"**{self.question}** You predicted {self.value:.3g} {self.unit}; measured here: "
            f"{self.measured:.3g} {self.unit} ({off})."
        )

    def _show(self, inside=None):
        def render():
            say(self.comparison())
            if self._then is not None:
                self._then()

        self._run(render, inside)

    @staticmethod
    def _run(show, inside=None):
        if inside is None:
            show()
        else:
            with inside:
                show()

    def _ipython_display_(self):
        import ipywidgets as w

        box = w.Text(
            value="" if self.value is None else f"{self.value:g}",
            placeholder="a number",
            description=self.unit or "value",
            layout=w.Layout(width="220px"),
        )
        button, self._area, note = w.Button(description="Submit", button_style="primary"), w.Output(), w.Label()
        self._note = note

        def on_click(_):
            try:
                self.submit(box.value)
                button.disabled, box.disabled = True, True
                note.value = self._recorded()
            except ValueError as exc:
                note.value = str(exc)

        button.on_click(on_click)
        show_widget(
            w.VBox([w.HTML(f"<b>Predict:</b> {self.question}"), w.HBox([box, button, note]), self._area]), repr(self)
        )


def ask(key, question, unit="", given=None):
    """A Prediction; display it to show the input widget."""
    return Prediction(key, question, unit, given)
