"""The diagnosis, stated before the fix and graded apart from it - as an interviewer would.

    from trainlab.debugging import diagnosis
    diagnosis.form("debugging/nc_7")                  # JupyterLab: a menu of causes and your evidence
    diagnosis.state("debugging/nc_7", causes=["..."], evidence=["label-test"])   # the same from code
    diagnosis.state("debugging/nc_7", text="the labels do not match the images")   # what your words read as

Causes come from the doctor's list of cause ids (`trainlab.doctor.causes`), so a new id shows
up in every menu. Evidence is chosen from the experiments run on that lab in this kernel
(`trainlab.debugging.investigate`), and it has to be one that tells the stated cause apart.
The first diagnosis stated for a lab is the one graded; later ones are shown "after
feedback". Which help the learner used before stating it (hints, the solution, the doctor on
that lab: `trainlab.checks.help_record`) is shown with the verdict. Running the lab's `%%lab` cell
grades the diagnosis and the fix separately: this module hands the checks its grader
(`checks.core.DIAGNOSIS`), for module 01's labs and its drills.
"""

import html
from dataclasses import dataclass

from trainlab.workbook import labs
from trainlab.checks import core, help_record
from trainlab.debugging import investigate
from trainlab.workbook.display import say, show_widget
from trainlab.doctor import causes as catalogue

STATED = {}  # lab -> [Diagnosis, ...] in the order stated; the first is graded


@dataclass(frozen=True, repr=False)
class Diagnosis:
    lab: str
    causes: tuple  # cause ids
    evidence: tuple  # investigate.Evidence
    help_before: tuple  # help used on this lab before stating it

    def __repr__(self):  # what a notebook shows when state(...) ends a cell: a line, not the fields
        return (
            f"Diagnosis of {self.lab}: {', '.join(self.causes)} "
            f"(evidence: {', '.join(e.experiment for e in self.evidence)})"
        )

    def _ipython_display_(self):  # state() has already said it was recorded
        pass


@dataclass(frozen=True)
class Grade:
    right: bool
    message: str
    help_before: tuple
    later: int  # diagnoses stated after this one (shown as "after feedback")

    @property
    def head(self):
        return f"Diagnosis {'right' if self.right else 'wrong'}"

    def __str__(self):
        used = f" (stated after: {', '.join(self.help_before)})" if self.help_before else " (stated before any help)"
        later = f"; {self.later} later diagnosis(es) not graded" if self.later else ""
        return f"diagnosis {'right' if self.right else 'wrong'}{used}: {self.message}{later}"


def read_words(text):
    """The causes a free-text diagnosis reads as, each shown with the question it answers: what a
    learner confirms before anything is recorded (a false match must not spend the graded diagnosis)."""
    found = catalogue.match(text)
    lines = "\n".join(f"- {catalogue.get(c).question} `[{c}]`" for c in found)
    say(
        f"Your words read as {'this cause' if len(found) == 1 else f'these {len(found)} causes'}:\n{lines}\n\n"
        "Is that what you mean? Nothing is recorded yet: in the form, *Use this reading* ticks exactly these "
        f"(then Submit); in code, `diagnosis.state(LAB, causes={list(found)}, evidence=[...])`."
    )
    return found


def _cause_ids(causes, text):
    if causes is None and not text:
        raise ValueError("state the causes (ids from the menu) or text= describing them")
    ids = list(causes or [])
    if text:
        ids += catalogue.match(text)  # several, for a diagnosis of two causes
    for cause in ids:
        catalogue.get(cause)  # an unknown id is an error naming the known ones
    if not ids:
        raise ValueError("choose at least one cause (nothing was recorded: your graded diagnosis is still to come)")
    return tuple(dict.fromkeys(ids))


def state(lab, causes=None, evidence=(), text=None, confirm=False):
    """Record a diagnosis of lab: cause ids and the ids of the experiments, run on this lab in this
    kernel, that support it. Returns the Diagnosis. Words (text=) are read back as causes and recorded
    only with confirm=True: otherwise this shows what they read as and records nothing."""
    name = labs.resolve(lab)
    if text and not confirm:  # read back, never recorded: a misreading must not spend the graded diagnosis
        read_words(text)
        if causes:
            say(f"(`causes={list(causes)}` was given too: nothing is recorded until you confirm.)")
        return None
    ids = _cause_ids(causes, text)
    gathered = {e.experiment: e for e in investigate.logged(name)}
    missing = [e for e in evidence if e not in gathered]
    if missing:
        raise ValueError(
            f"no result of {', '.join(missing)} on {name} in this kernel: run "
            f"investigate.run({name!r}, {missing[0]!r}) first (evidence must be something you saw)"
        )
    if not evidence:
        raise ValueError("give the evidence: the experiment(s), run on this lab, whose result shows the cause")
    diagnosis = Diagnosis(name, ids, tuple(gathered[e] for e in evidence), help_record.before(name))
    STATED.setdefault(name, []).append(diagnosis)
    first = STATED[name][0]
    graded = (
        "It is graded when you run the lab's cell."
        if first is diagnosis
        else f"Not graded: your first diagnosis ({', '.join(first.causes)}) is the one graded."
    )
    say(
        f"Diagnosis of `{name}` recorded: {', '.join(ids)}; evidence: "
        f"{'; '.join(str(e) for e in diagnosis.evidence)}. {graded}"
    )
    return diagnosis


def grade(lab):
    """The Grade of the first diagnosis stated for lab, or None when none was."""
    name = labs.resolve(lab)
    stated = STATED.get(name)
    if not stated:
        return None
    first, true = stated[0], set(labs.get(name).causes)
    named = set(first.causes)
    problems = []
    if named - true:
        problems.append(
            f"{', '.join(sorted(named - true))} {'is' if len(named - true) == 1 else 'are'} not what breaks this script"
        )
    if true - named:
        problems.append(f"{len(true - named)} cause(s) not named")
    cited = {e.experiment for e in first.evidence}
    for cause in sorted(named & true):
        if not cited & set(catalogue.get(cause).evidence):
            problems.append(
                f"the evidence you cite ({', '.join(sorted(cited))}) does not tell {cause} apart "
                "from the other causes: which experiment would?"
            )
    supporting = set().union(*(catalogue.get(c).evidence for c in named))
    # an experiment of a named cause's category is context a careful engineer cites too; one from elsewhere
    # is not evidence for anything named (and citing every experiment is not an argument)
    categories = {catalogue.get(c).category for c in named}
    context = {e for e in cited - supporting if _categories(e) & categories}
    unrelated = cited - supporting - context
    # the right causes, each shown by an experiment cited, is a right diagnosis: a citation that shows none of
    # them is a note under the grade, never its headline
    note = (
        f"; a note: {', '.join(sorted(unrelated))} cannot show any cause you named - cite the experiment that "
        "shows each cause"
        if unrelated
        else ""
    )
    if problems:
        return Grade(False, "; ".join(problems) + note, first.help_before, len(stated) - 1)
    support = ", ".join(e.experiment for e in first.evidence if e.experiment in supporting)
    also = f" (also cited, as context: {', '.join(sorted(context))})" if context else ""
    message = f"{', '.join(first.causes)}, supported by {support}{also}{note}"
    return Grade(True, message, first.help_before, len(stated) - 1)


def _categories(experiment):
    """The categories of the causes an experiment tells apart."""
    return {c.category for c in catalogue.CAUSES.values() if experiment in c.evidence}


def form(lab):
    """A widget: pick the causes from the doctor's menu and the evidence from this kernel's
    experiments on the lab (or describe the cause in words), then submit."""
    return DiagnosisForm(labs.resolve(lab))


class DiagnosisForm:
    """Checkboxes, one per cause of the doctor's menu (grouped by category) and one per experiment run on
    the lab; a box for words, read back as causes you confirm by ticking; the chosen set is shown as it
    grows, and Submit records exactly that."""

    def __init__(self, lab):
        self.lab = lab

    def __repr__(self):  # headless runs: what the form is, never the menu (which lists every cause id)
        return f"Diagnosis form for {self.lab}: open the notebook in JupyterLab, or call diagnosis.state(...)"

    def _ipython_display_(self):
        import ipywidgets as w

        boxes = {
            c.id: w.Checkbox(description=f"[{c.id}]", indent=False, layout=w.Layout(width="auto"))
            for _, group in catalogue.menu()
            for c in group
        }
        line = lambda c: w.HBox([boxes[c.id], w.HTML(c.question)], layout=w.Layout(align_items="center"))  # noqa: E731
        groups = [
            w.VBox([w.HTML(f"<b>{category}</b>"), *(line(c) for c in group)]) for category, group in catalogue.menu()
        ]
        words = w.Text(
            placeholder="or describe the cause in your own words, then press Read", layout=w.Layout(width="70%")
        )
        read, refresh = w.Button(description="Read my words"), w.Button(description="refresh evidence")
        use = w.Button(description="Use this reading", disabled=True)
        reading_out = w.Output()
        reading = []  # the causes the words last read as
        submit, out = w.Button(description="Submit", button_style="primary"), w.Output()
        evidence_box, chosen = w.VBox(), w.HTML()
        evidence = {}

        def summary(_=None):
            causes = [c for c, b in boxes.items() if b.value]
            cited = [e for e, b in evidence.items() if b.value]
            chosen.value = (
                f"<b>Your diagnosis so far:</b> {', '.join(causes) or 'no cause ticked'}; "
                f"<b>evidence:</b> {', '.join(cited) or 'none ticked'}"
            )

        def reload(_=None):
            ticked = {e for e, b in evidence.items() if b.value}
            evidence.clear()
            found = investigate.logged(self.lab)
            for e in found:
                evidence[e.experiment] = w.Checkbox(
                    value=e.experiment in ticked,
                    description=f"{e.experiment}:",
                    indent=False,
                    layout=w.Layout(width="auto"),
                )
                evidence[e.experiment].observe(summary, "value")
            evidence_box.children = [
                w.HBox([evidence[e.experiment], w.HTML(html.escape(e.result))]) for e in found
            ] or [w.HTML("<i>no experiment run on this lab yet: run investigate.run(...) and refresh</i>")]
            summary()

        def on_read(_):
            with reading_out:  # right under the box the words were typed in
                reading_out.clear_output()
                reading.clear()
                try:
                    reading.extend(read_words(words.value))
                except ValueError:
                    print("No cause read in these words: tick the causes above instead.")
                use.disabled = not reading

        def on_use(_):  # the learner's confirmation: exactly the causes read, in place of any ticked before
            for cause, box in boxes.items():
                box.value = cause in reading
            use.disabled = True
            with reading_out:  # the question above is answered: say what is ticked, not "nothing is recorded"
                reading_out.clear_output()
                print(f"Ticked: {', '.join(reading)}. Tick the evidence below, then Submit to record it.")

        def send(_):
            with out:
                out.clear_output()
                try:
                    state(
                        self.lab,
                        causes=[c for c, b in boxes.items() if b.value],
                        evidence=[e for e, b in evidence.items() if b.value],
                    )
                    reading_out.clear_output()  # what the words read as is history once a diagnosis is recorded
                except ValueError as exc:
                    print(f"not recorded: {exc}")

        for box in boxes.values():
            box.observe(summary, "value")
        read.on_click(on_read)
        use.on_click(on_use)
        refresh.on_click(reload)
        submit.on_click(send)
        reload()
        show_widget(
            w.VBox(
                [
                    w.HTML(f"<b>Your diagnosis of {self.lab}</b> (the first one submitted is graded)"),
                    w.GridBox(groups, layout=w.Layout(grid_template_columns="1fr 1fr")),
                    w.HBox([words, read, use]),
                    reading_out,
                    w.HTML("<b>Evidence</b> (experiments run on this lab in this kernel)"),
                    evidence_box,
                    chosen,
                    w.HBox([refresh, submit]),
                    out,
                ]
            ),
            repr(self),
        )


core.DIAGNOSIS.update(grade=grade, doctor_reading=investigate.doctor_report)
