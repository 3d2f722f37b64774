# The configuration jupyterhub reads for a trainlab room. Start the hub with `make hub` (which runs
# `python -m trainlab.hub`): it checks the roster, the address and the certificate, then starts
# jupyterhub with this file and its settings in TRAINLAB_HUB_* variables. See docs/instructor.md.
from trainlab.hub import config

config.apply(c, config.Settings.from_env())  # noqa: F821 - `c` is the config object jupyterhub provides
