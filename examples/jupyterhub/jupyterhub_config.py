"""JupyterHub for a team using nini: one single-user server per person, nini inside each, one
PostgreSQL database and a team library of skills and experience shared by everyone.

    jupyterhub -f examples/jupyterhub/jupyterhub_config.py

What each user's server gets (``Spawner.environment``; nini reads only its NINI_* variables):

- ``NINI_HOME=~/.nini``: their own settings, user skills, logs and session workspaces, in the home
  directory the spawner gives them.
- ``NINI_DATABASE_URL``: the shared history store (PostgreSQL; ``pip install 'nini[postgres]'``).
  Every session records its owner, the hub user's name, and a user's server lists and opens only
  that user's sessions: alice's server never shows bob's, though both are in one database. Hub
  admins (``admin_users``) see everyone's, as do the names in nini's ``server.admins``.
- ``NINI_SESSION_OWNER``: the user's name, so that what they run outside the server's REST API
  (``nini ask`` in a terminal, the ``%%nini`` magic in a notebook) is theirs too.
- ``NINI_SKILLS__EXTRA_DIRS``: the team skills folder, after the user's own skills.
- ``NINI_EXPERIENCE__TEAM_DIR``: the team experience library, and
  ``NINI_EXPERIENCE__TEAM_WRITABLE``: "true" only for members of the hub group
  ``nini-maintainers``; anyone else's server refuses to deposit, deprecate or roll back team
  experience (403 POLICY_VIOLATION, "the team experience library is read-only for you") and offers
  the project library instead.

Make the file system say the same, so that it holds for code that does not ask nini (the
``SimpleLocalProcessSpawner`` of the test runs everyone as one OS user, so there the setting is
what holds). With the LocalProcessSpawner (one system account per user) and a system group of the
same name::

    groupadd nini-maintainers && usermod -aG nini-maintainers alice
    install -d -g nini-maintainers -m 2775 /srv/nini/team-skills /srv/nini/team-experience

(readable by all, writable by the group; the setgid bit keeps new files in the group). In
containers (DockerSpawner, KubeSpawner) mount both folders read-only for users and read-write for
maintainers instead.

Site values come from the hub's own environment (the names below, all optional); this file is also
what ``tests/jupyter_ext/test_jupyterhub.py`` runs, with a dummy authenticator and local processes.
"""

import json
import os

c = get_config()  # noqa: F821 - defined by JupyterHub when it loads this file

DATABASE_URL = os.environ.get("NINI_HUB_DATABASE_URL", "postgresql+psycopg://nini@127.0.0.1:5432/nini")
TEAM_SKILLS = os.environ.get("NINI_HUB_TEAM_SKILLS", "/srv/nini/team-skills")
TEAM_EXPERIENCE = os.environ.get("NINI_HUB_TEAM_EXPERIENCE", "/srv/nini/team-experience")
MAINTAINERS_GROUP = "nini-maintainers"


def is_maintainer(spawner) -> bool:
    """Whether the user may change the team's experience library: a member of the hub group."""
    return any(group.name == MAINTAINERS_GROUP for group in spawner.user.groups)


c.JupyterHub.load_groups = {MAINTAINERS_GROUP: {"users": os.environ.get("NINI_HUB_MAINTAINERS", "").split()}}

# jupyterhub-singleuser loads every enabled server extension; installing nini enables its own
# (etc/jupyter/jupyter_server_config.d/jupyter_ext.json), so /user/NAME/nini/api/ is there.
c.Spawner.cmd = ["jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {
    "NINI_HOME": "~/.nini",
    "NINI_DATABASE_URL": DATABASE_URL,
    "NINI_SESSION_OWNER": lambda spawner: spawner.user.name,
    "NINI_SKILLS__EXTRA_DIRS": json.dumps([TEAM_SKILLS]),
    "NINI_EXPERIENCE__TEAM_DIR": TEAM_EXPERIENCE,
    "NINI_EXPERIENCE__TEAM_WRITABLE": lambda spawner: "true" if is_maintainer(spawner) else "false",
}
