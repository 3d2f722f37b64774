"""A workshop room on JupyterHub: `make hub` (docs/instructor.md).

    python -m trainlab.hub --roster room.toml                  # the hub on 127.0.0.1:8000
    python -m trainlab.hub --roster room.toml --ip 10.0.0.5 --ssl-cert c.pem --ssl-key k.pem

JupyterHub does the serving, logins and spawning; this package only configures it and adds the
instructor's room view. One job per module:
    `roster.py`    the instructor's roster file -> allowed users and admins
    `state.py`     the one state folder: database, cookie secret, proxy token, records
    `limits.py`    memory and process limits per learner, from the workbook's own measurements
    `spawners.py`  how each learner is kept apart (systemd dynamic users, Unix users, or test-only none)
    `cgroups.py`   the Unix-user route's memory and process cap: a cgroup per learner
    `scopes.py`    who may do what: the roles and scopes of learners, instructors and the culler
    `claims.py`    one-time claim codes for first logins (hashed), the count of failed logins, their lock
    `auth.py`      the room's authenticator: a first login claims a name with its code; uniform, throttled failures
    `config.py`    the JupyterHub configuration built from the above (jupyterhub_config.py calls it)
    `proxy.py`     the proxy a restarted hub adopts (learners' routes never drop)
    `safety.py`    what makes a room unsafe or unable to start (an address without TLS, no node)
    `launch.py`    the command line (`__main__.py`): refuses what is unsafe, then runs jupyterhub
    `app.py`       jupyterhub as make hub runs it: the same application, with a stop that says what it waits for
    `stopping.py`  what a stopping hub says: what stops, what stays, what it still waits for
    `singleuser.py` each learner's server: their working copy in their home, then Jupyter
    `records.py`   the records the room received, one file per learner, in the token owner's name, checked
    `grid.py`      records -> the room's grid, stuck exercises first (pure, unit-tested)
    `room.py`      the room view: a JupyterHub service that takes records and shows the grid
"""
