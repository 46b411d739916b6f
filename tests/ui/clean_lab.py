"""A shared `jupyter lab` put back to the state it started in, between the test modules that share it.

A lab start costs 11-21 s on a loaded 2-core machine, so the modules that run under default settings
share one lab per xdist worker (tests/ui/conftest.py). Before each of them, everything a module can
leave behind goes, through the lab's own REST APIs where the server keeps the state in memory and on
disk where it reads the disk afresh: nini's sessions (their runs cancelled first) and with them their
reports, feedback and approvals; JupyterLab's sessions and kernels; the files of the root folder;
JupyterLab's settings and saved workspace (the theme, the open tabs a page would restore); nini's
model and preference switches as settings.json had them; preferences, learned or stated; the
skills' switches and skills a module wrote; pending experience and active team library entries. A module
thus sees a lab as fresh as its own, whichever modules ran before it and however they ended.
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests import timeouts

if TYPE_CHECKING:
    from tests.ui.conftest import Lab


@dataclass(frozen=True)
class StartState:
    """What the lab looked like once it answered, before any test used it."""

    settings: dict[str, Any]
    models: list[dict[str, Any]]
    switches: dict[str, bool]
    skills: dict[tuple[str, str], bool]
    own_skills: frozenset[str]
    lab_settings: Path  # a copy of the lab-settings folder as it started

    @classmethod
    def of(cls, lab: Lab) -> StartState:
        copy = lab.root / "lab-settings.start"
        shutil.copytree(lab.root / "lab-settings", copy)
        return cls(
            settings=json.loads((lab.home / "settings.json").read_text()),
            models=lab.nini("GET", "models")["providers"],
            switches=lab.nini("GET", "preferences/switches"),
            skills=skill_switches(lab),
            own_skills=frozenset(own_skills(lab)),
            lab_settings=copy,
        )


def skill_switches(lab: Lab) -> dict[tuple[str, str], bool]:
    return {(s["name"], s["type"]): s["enabled"] for s in lab.nini("GET", "skills")}


def own_skills(lab: Lab) -> set[str]:
    """The folders of NINI_HOME/skills (the skills a user wrote, as the sidebar's form writes them)."""
    folder = lab.home / "skills"
    return {p.name for p in folder.iterdir()} if folder.is_dir() else set()


def reset(lab: Lab, start: StartState) -> None:
    """Put ``lab`` back to ``start`` (see the module's docstring); pages are closed by then."""
    delete_nini_sessions(lab)
    for session in lab.get("/api/sessions"):
        lab.request("DELETE", f"/api/sessions/{session['id']}")
    for kernel in lab.kernels():
        lab.request("DELETE", f"/api/kernels/{kernel['id']}")
    empty(lab.notebooks)  # with .nini/: the project's pending experience and library
    empty(lab.root / "workspaces")  # else a new page restores the last module's tabs and sidebar
    empty(lab.root / "config" / "labconfig")  # the page config a negative control may have written
    shutil.rmtree(lab.root / "lab-settings")
    shutil.copytree(start.lab_settings, lab.root / "lab-settings")
    restore_settings(lab, start)
    for row in lab.nini("GET", "preferences")["preferences"]:
        lab.nini("DELETE", f"preferences/{row['id']}")
    restore_skills(lab, start)
    for entry in lab.nini("GET", "experience/entries")["entries"]:
        lab.nini("POST", f"experience/entries/{entry['level']}/{entry['id']}/deprecate", {"confirm": True})


def delete_nini_sessions(lab: Lab, timeout_s: float = 60) -> None:
    """Cancel every session's run and delete the session; a session answers CONFLICT until its run
    (its stop hooks included) has ended, so each is asked again until then."""
    sessions = [s["id"] for s in lab.nini("GET", "sessions?limit=1000")]
    for session in sessions:
        lab.nini("POST", f"sessions/{session}/cancel")
    deadline = time.monotonic() + timeouts.timeout(timeout_s)
    for session in sessions:
        while True:
            try:
                lab.nini("DELETE", f"sessions/{session}")
                break
            except urllib.error.HTTPError as refused:
                if refused.code != 409 or time.monotonic() > deadline:
                    raise
            time.sleep(0.1)  # a poll of the run's end


def empty(folder: Path) -> None:
    for path in folder.iterdir():
        shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()


def restore_settings(lab: Lab, start: StartState) -> None:
    """settings.json as it started, and the server's view of it: the providers (a PUT of one makes the
    server read the whole ``llm`` section again) and the preference switches (kept in memory)."""
    if lab.nini("GET", "models")["providers"] != start.models:
        (lab.home / "settings.json").write_text(json.dumps(start.settings))
        first = dict(start.settings["llm"]["providers"][0])
        lab.nini("PUT", f"models/providers/{first.pop('name')}", first)
    if lab.nini("GET", "preferences/switches") != start.switches:
        lab.nini("PUT", "preferences/switches", start.switches)


def restore_skills(lab: Lab, start: StartState) -> None:
    """The skills' switches as they started, without the skills a module wrote."""
    added = own_skills(lab) - start.own_skills
    for name in added:
        shutil.rmtree(lab.home / "skills" / name)
    if added:
        lab.nini("POST", "skills/refresh")
    for (name, kind), enabled in skill_switches(lab).items():
        wanted = start.skills.get((name, kind))
        if wanted is not None and wanted != enabled:
            lab.nini("PUT", f"skills/{name}/enabled?type={kind}", {"enabled": wanted})
