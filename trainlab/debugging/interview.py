"""A mock interview on a drill: a script you have never seen, a clock, your diagnosis and fix,
then the reveal - the doctor's reading and the planted bug beside your answer.

    interview = MockInterview(seed=None, minutes=20)   # a new drill (trainlab.drill), the clock starts
    interview.brief()          # the timer, the symptom as reported (measured), the script
    interview.open()           # JupyterLab: a checked %%lab cell with the script appears below
    diagnosis.form(interview.name)                     # state the diagnosis first, as for the labs
    interview.check(text)      # or run the %%lab cell: the fix is checked, the diagnosis graded
    interview.reveal()         # once the fix passes: time taken, your graded diagnosis, the doctor's report, the answer
"""

import threading
import time

from trainlab import drill
from trainlab.checks import help_record
from trainlab.checks.magic import cell_text
from trainlab.debugging import diagnosis, investigate
from trainlab.workbook.display import Code, in_ipython, say, show, show_widget


class MockInterview:
    def __init__(self, seed=None, minutes=20):
        self.drill = drill.new(seed)
        self.name, self.minutes = self.drill.name, minutes
        self.started, self._ticking, self._revealed = time.monotonic(), None, False
        self._tools_at_start = investigate.TOOL_SECONDS[0]

    @property
    def stopped(self):
        """When a check first passed (the %%lab cell's, or check()'s): the clock stops there."""
        return self.drill.exercise.passed_at

    def elapsed(self):
        """Seconds on the clock: since the start, less what the workbook's own runs took (the doctor's run
        behind the brief, the checklist and the report), which the candidate only waited for."""
        tools = investigate.TOOL_SECONDS[0] - self._tools_at_start
        return max(0.0, (self.stopped or time.monotonic()) - self.started - tools)

    def _clock_text(self):
        left = self.minutes * 60 - self.elapsed()
        sign, left = ("", left) if left >= 0 else ("over by ", -left)
        return f"{sign}{int(left) // 60:02d}:{int(left) % 60:02d}"

    def timer(self):
        """A countdown that ticks in JupyterLab (a background thread updates the widget)."""
        import ipywidgets as w

        label = w.HTML(f"<b>⏱ {self._clock_text()}</b> left of {self.minutes} min")

        def tick():
            while self.stopped is None and not self._revealed:
                label.value = f"<b>⏱ {self._clock_text()}</b> left of {self.minutes} min"
                time.sleep(1.0)

        if self._ticking is None:
            self._ticking = threading.Thread(target=tick, daemon=True)
            self._ticking.start()
        show_widget(label, f"Timer: {self.minutes} minutes, started.")

    def brief(self):
        """What the interviewer hands over: the clock, the symptom with its numbers, the script."""
        if in_ipython():
            self.timer()
        say(f"**{self.name}** - reported: {self.drill.report}.  \n> " + investigate.symptom(self.name))
        show(Code(self.drill.source))

    def open(self):
        """Insert a checked `%%lab` cell holding the script below the running cell (JupyterLab)."""
        from IPython import get_ipython

        get_ipython().set_next_input(cell_text(self.name), replace=False)

    def check(self, source):
        """Check a fix, as running the `%%lab` cell does; the clock stops at the first pass."""
        return self.drill.check(source)

    def reveal(self, ask=False):
        """Time taken, your graded diagnosis, the doctor's reading of the same run, the answer - once
        your fix has passed, or now with ask=True (the planted bug is the answer: it stays closed until
        then, so stepping through the notebook never shows it)."""
        if self.stopped is None and not ask:
            say(
                "*Locked until your fix passes its check (the clock stops there); `interview.reveal(ask=True)` "
                "shows the answer now.*"
            )
            return
        if self.stopped is None:
            help_record.record(self.name, "reveal")
        minutes = self.elapsed() / 60
        self._revealed = True  # the countdown stops ticking
        grade = diagnosis.grade(self.name)
        stated = diagnosis.STATED.get(self.name)
        yours = ", ".join(stated[0].causes) if stated else "none stated"
        report = investigate.doctor_report(self.name)
        planted = self.drill.lab.causes
        lines = [
            f"**Time:** {minutes:.1f} of {self.minutes} minutes"
            + (" (to the first passing check)" if self.stopped else " (no passing check yet)"),
            f"**Your diagnosis:** {yours}" + (f" - {grade}" if grade else ""),
            f"**The doctor's root causes:** {', '.join(report.root_causes) or 'none'}",
            "**Planted:** " + "; ".join(f"`{c.id}` ({c.category}): {c.explanation}" for c in planted.values()),
        ]
        say("\n\n".join(lines))
        show(report)
        show(Code(self.drill.exercise.solution_text()))
