"""The learner's workbook: what the notebooks show and keep, apart from what they teach.

- `modules.py`: the notebook modules, named once (number, package, notebook, title);
- `labs.py`: the lab format - a broken script with named fixes and a `#|` header, in one file;
- `params.py`: notebook parameters and the environment self-check (`trainlab.setup`);
- `display.py`, `plots.py`: text, Markdown and tables; run dashboards, image grids, the batch browser;
- `predict.py`: predict, then measure - a value held until the learner commits to a guess;
- `published.py`: published figures (GPU datasheets, papers) from data/published.toml, with sources;
- `progress.py`: a learner's records - which labs passed, with what help (`python -m trainlab.progress`);
- `notebooks.py`: learner notebooks generated from solutions/ (`make notebooks`);
- `workspace.py`: the learner's working copies in work/ (`make lab`), never overwritten.

Notebooks, solutions and labs import these by their short names (`from trainlab import labs`,
`trainlab.display`): the package root maps each to its module here (`trainlab/__init__.py`).
Part of the core: imports the top-level base and the training core, never a module package.
"""
