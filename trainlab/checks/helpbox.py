"""Help as a learner asks for it: a row of buttons under an exercise, never a cell to run through.

    trainlab.checks.get("debugging/nc_7").help()    # Next hint (1 of 4) | The doctor's reading | The solution

A hint cell on the notebook's Shift+Enter path would hand out hints (and record them as help used)
to anyone stepping to the next section; a button does nothing until it is clicked. Headless runs
(papermill) show one line saying how to ask from code instead.
"""

from trainlab.checks import core, help_record
from trainlab.workbook.display import show, show_widget


class HelpBox:
    def __init__(self, exercise):
        self.exercise = exercise

    @property
    def offers_doctor(self):
        # debugging labs and drills: the doctor reads training scripts (module 01 hands over its reader)
        return self.exercise.asks_for_diagnosis and "doctor_reading" in core.DIAGNOSIS

    def __repr__(self):
        name = self.exercise.name
        doctor = ", the doctor's reading" if self.offers_doctor else ""
        return (
            f"Help for {name}: in JupyterLab, buttons for the next hint{doctor} and the solution; "
            f"from code, trainlab.checks.get({name!r}).hint()"
        )

    def _label(self):
        rung, total = self.exercise._next_hint + 1, len(self.exercise.hints)
        if not self.exercise.hints:
            return "No hints"
        return f"Next hint ({rung} of {total})" if not self._shown_last() else f"All {total} hints shown"

    def _shown_last(self):
        used = help_record.HELP.get(self.exercise.lab, [])
        return f"hint {len(self.exercise.hints)}" in used

    def _ipython_display_(self):
        import ipywidgets as w

        out = w.Output()
        hint = w.Button(description=self._label(), layout=w.Layout(width="auto"), disabled=not self.exercise.hints)
        buttons = [hint]

        def on_hint(_):
            with out:
                self.exercise.hint()
            hint.description, hint.disabled = self._label(), self._shown_last()

        hint.on_click(on_hint)
        if self.offers_doctor:
            doctor = w.Button(description="The doctor's reading", layout=w.Layout(width="auto"))

            def on_doctor(_):  # two clicks, as for the solution: the doctor names the causes
                if doctor.description == "The doctor's reading":
                    doctor.description, doctor.button_style = (
                        "Ask the doctor? It names the causes: click again",
                        "warning",
                    )
                    return
                doctor.button_style = ""
                doctor.disabled, doctor.description = True, "The doctor is reading the run..."
                with out:
                    show(core.DIAGNOSIS["doctor_reading"](self.exercise.lab))
                doctor.disabled, doctor.description = False, "The doctor's reading"

            doctor.on_click(on_doctor)
            buttons.append(doctor)
        solution = w.Button(description="The solution", layout=w.Layout(width="auto"))

        def on_solution(_):  # two clicks: a slip of the mouse must not show (and record) the whole fix
            if solution.description == "The solution":
                solution.description, solution.button_style = "Show the fix? Click again", "warning"
                return
            solution.description, solution.button_style = "The solution", ""
            with out:
                self.exercise.solution()

        solution.on_click(on_solution)
        buttons.append(solution)
        show_widget(w.VBox([w.HBox([w.HTML("<b>Stuck?</b>"), *buttons]), out]), repr(self))
