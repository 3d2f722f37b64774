"""The workbook's modules, named once: number, package, notebook, title.

    modules.get("debugging").notebook      # "01_debugging"
    modules.of_notebook("02_fsdp").package # "fsdp"

Every table that maps one of these names to another (progress reports, the exercise list, the
doctor's training labs, tests that walk the notebooks) derives it from MODULES. A module's code is
`trainlab/<package>/`, its labs `labs/<package>/`, its tests `tests/<package>/`, its notebook
`solutions/<notebook>.ipynb` (and the learner's `notebooks/<notebook>.ipynb`).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    number: str  # "00".."05": the order a learner takes them in
    package: str  # trainlab/<package>, labs/<package>, tests/<package>
    notebook: str  # file stem under solutions/ and notebooks/
    title: str
    training_labs: bool = False  # its labs are single-process training scripts (the doctor reads them)

    @property
    def exercises(self):
        """The module that declares its exercises (an EXERCISES tuple): what `checks.exercises` loads. The checks
        layer sits below the modules' packages, so it reaches them only through this declaration."""
        return f"trainlab.{self.package}.exercises"

    @property
    def heading(self):
        return f"{self.number} {self.title}"


MODULES = (
    Module("00", "start", "00_start_here", "start here", training_labs=True),
    Module("01", "debugging", "01_debugging", "debugging", training_labs=True),
    Module("02", "fsdp", "02_fsdp", "FSDP"),
    Module("03", "sparse", "03_sparse_allreduce", "sparse all-reduce"),
    Module("04", "kernels", "04_custom_kernels", "custom kernels"),
    Module("05", "memory", "05_memory_precision_hardware", "memory, precision, hardware"),
)
PACKAGES = tuple(m.package for m in MODULES)
NOTEBOOKS = tuple(m.notebook for m in MODULES)


def get(package):
    for module in MODULES:
        if module.package == package:
            return module
    raise KeyError(f"no module {package!r}; the modules: {', '.join(PACKAGES)}")


def of_notebook(notebook):
    """The module a notebook (its file stem, or a name ending in .ipynb) belongs to."""
    stem = str(notebook).rsplit("/", 1)[-1].removesuffix(".ipynb")
    for module in MODULES:
        if module.notebook == stem:
            return module
    raise KeyError(f"no notebook {notebook!r}; the notebooks: {', '.join(NOTEBOOKS)}")
