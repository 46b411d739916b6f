"""nini's Jupyter integration: the server extension (REST + WebSocket under ``/nini/api/``), the
IPython magics (``%load_ext nini``, in ``jupyter_ext.magics``) and the JupyterLab frontend (sources
in ``frontend/``, the prebuilt extension in ``labextension/``, installed as ``share/jupyter/labextensions/nini``).

Installing nini enables the server extension (``etc/jupyter/jupyter_server_config.d/nini.json``);
``jupyter server extension disable jupyter_ext`` turns it off. Imports stay lazy here so that the
magics, loaded inside a kernel, do not pull in jupyter_server.
"""

from __future__ import annotations

from typing import Any

from nini import __version__

__all__ = ["__version__"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from jupyter_ext.app import NiniExtensionApp

    return [{"module": "jupyter_ext", "app": NiniExtensionApp}]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt frontend is, for ``jupyter labextension develop`` (editable installs)."""
    return [{"src": "labextension", "dest": "nini"}]
