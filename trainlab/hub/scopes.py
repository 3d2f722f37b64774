"""Who may do what in a room, as JupyterHub roles and scopes (config.py and hub/z2jh/values.yaml use these).

- Every user may reach the room service (`access:services!service=room`), and their server's token carries
  that scope, so a check in their kernel can post its record.
- Only instructors hold the custom scope VIEW, which the room view asks for before it shows the grid;
  the room's OAuth client may pass VIEW on, so an instructor's login to the view carries it.
"""

ROOM = "room"  # the service's name: /services/room/
ACCESS_ROOM = f"access:services!service={ROOM}"
VIEW = "custom:trainlab-room:view"
CUSTOM_SCOPES = {VIEW: {"description": "see the room view: every learner's exercises"}}
SERVER_TOKEN = ["users:activity!user", "access:servers!server", ACCESS_ROOM]  # the default server role, + the room
CULLER = ["list:users", "read:users:activity", "read:servers", "delete:servers"]  # jupyterhub-idle-culler's README


def roles(instructors, culler="idle-culler"):
    """load_roles for a room: users reach the room, instructors see it, the culler stops idle servers."""
    return [{"name": "user", "scopes": ["self", ACCESS_ROOM]},
            {"name": "instructor", "scopes": [VIEW, ACCESS_ROOM], "users": list(instructors)},
            {"name": "idle-culler", "scopes": CULLER, "services": [culler]}]
