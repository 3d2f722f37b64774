"""What each learner's server runs, as the learner: make their working copy, then start Jupyter.

    python -m trainlab.hub.singleuser [jupyterhub-singleuser arguments]

The working copy is ~/trainlab, made by the same `trainlab.workbook.workspace.sync` that `make lab` uses:
copied the first time, an edited notebook never overwritten. Running as the learner means the files
are theirs (mode 0700 home with the Unix-user and systemd spawners).
"""

import os
import sys
from pathlib import Path

from trainlab.workbook import workspace

FOLDER = "trainlab"


def workbook_prefix():
    """The workbook environment's prefix (the hub's environment sees its packages through a .pth file)."""
    import jupyterlab

    return Path(jupyterlab.__file__).resolve().parents[4]  # <prefix>/lib/pythonX.Y/site-packages/jupyterlab


def jupyter_paths(env, prefix):
    """Jupyter reads its server config (which extensions are on: JupyterLab) and lab extensions (ipywidgets)
    from its own prefix; the workbook's live in the workbook environment's, so name them too."""
    for key, folder in (("JUPYTER_CONFIG_PATH", prefix / "etc" / "jupyter"), ("JUPYTER_PATH", prefix / "share" / "jupyter")):
        env[key] = os.pathsep.join(filter(None, [str(folder), env.get(key)]))
    return env


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    jupyter_paths(os.environ, workbook_prefix())
    root = Path.home() / FOLDER
    root.parent.mkdir(parents=True, exist_ok=True)
    workspace.sync(root, made_by="hub")
    os.chdir(root)
    cmd = [sys.executable, "-m", "jupyterhub.singleuser", f"--ServerApp.root_dir={root}",
           f"--LabApp.app_settings_dir={workspace.LAB_SETTINGS}",  # no news or update prompt, as make lab
           "--LanguageServerManager.autodetect=False", *argv]
    if os.geteuid() == 0:  # only the test-only spawner runs learners as root; Jupyter refuses root without this
        cmd.append("--allow-root")
    os.execv(sys.executable, cmd)


if __name__ == "__main__":
    main()
