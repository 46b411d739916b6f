"""The shared lab put back as it started (tests/ui/clean_lab.py), so modules sharing a worker's lab see
none of each other's leftovers: every kind of state a browser module leaves behind is made through the
lab's own APIs, a turn is left running on a held model, and after ``reset`` the lab answers as it did
at its start. No page: this is the REST side of what every browser module relies on.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text
from tests.ui.clean_lab import StartState, own_skills, reset, skill_switches
from tests.ui.conftest import Lab

pytestmark = pytest.mark.slow

NOTEBOOK = {"type": "notebook", "content": {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}}


def leave_everything_behind(lab: Lab, llm: ScriptedLLM, held: threading.Event) -> None:
    """What the browser modules leave: sessions (one with its turn still running), a notebook with its
    kernel, a file, a theme and a saved workspace, a disabled frontend, a provider's price, a switched
    off injection, preferences, a written skill and a disabled one."""
    done = lab.nini("POST", "sessions", {"title": "finished"})["id"]
    assert lab.nini("POST", f"sessions/{done}/run-code", {"code": "x = 1"})["success"] is True
    llm.reply(text("never seen", hold=held))
    lab.nini("POST", "ask", {"message": "Think for as long as you like"})
    lab.request("PUT", "/api/contents/left.ipynb", NOTEBOOK)
    lab.request(
        "POST",
        "/api/sessions",
        {"path": "left.ipynb", "type": "notebook", "name": "left.ipynb", "kernel": {"name": "python3"}},
    )
    lab.request("PUT", "/api/contents/notes.txt", {"type": "file", "format": "text", "content": "left"})
    theme = lab.root / "lab-settings" / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    theme.write_text(json.dumps({"theme": "JupyterLab Dark"}))
    (lab.root / "workspaces" / "default-37a8.jupyterlab-workspace").write_text("{}")
    (lab.root / "config" / "labconfig" / "page_config.json").write_text(
        json.dumps({"disabledExtensions": {"nini": True}})
    )
    lab.nini(
        "PUT",
        "models/providers/local",
        {"kind": "openai", "base_url": llm.base_url, "model": "m", "input_per_mtok": 2.5},
    )
    lab.nini("PUT", "preferences/switches", {"injection": False})
    lab.nini("POST", "preferences", {"key": "tone", "value": "formal"})
    lab.nini("POST", "skills", {"name": "left-behind", "description": "A skill a module wrote.", "category": "other"})
    lab.nini("PUT", "skills/data-quality-check/enabled?type=markdown", {"enabled": False})


def state(lab: Lab) -> dict[str, Any]:
    """What a module would see of the lab."""
    return {
        "sessions": lab.nini("GET", "sessions"),
        "kernels": lab.kernels(),
        "jupyter sessions": lab.get("/api/sessions"),
        "files": sorted(p.name for p in lab.notebooks.iterdir() if p.name != ".nini"),
        "workspaces": sorted(p.name for p in (lab.root / "workspaces").iterdir()),
        "page config": sorted(p.name for p in (lab.root / "config" / "labconfig").iterdir()),
        "lab settings": sorted(
            str(p.relative_to(lab.root / "lab-settings")) for p in (lab.root / "lab-settings").rglob("*")
        ),
        "providers": lab.nini("GET", "models")["providers"],
        "switches": lab.nini("GET", "preferences/switches"),
        "preferences": lab.nini("GET", "preferences")["preferences"],
        "skills": skill_switches(lab),
        "own skills": own_skills(lab),
        "experience": lab.nini("GET", "experience/entries")["entries"],
    }


def test_reset_takes_the_lab_back_to_its_start(lab: Lab, llm: ScriptedLLM, shared_lab: tuple[Lab, StartState]) -> None:
    _, start = shared_lab
    fresh = state(lab)
    assert fresh["sessions"] == [] and fresh["kernels"] == [] and fresh["files"] == []  # the fixture reset it
    held = threading.Event()
    try:
        leave_everything_behind(lab, llm, held)
        left = state(lab)
        assert {key for key in fresh if left[key] != fresh[key]} == set(fresh) - {"experience"}, left  # all of it dirty
        assert len(left["sessions"]) == 2
        reset(lab, start)  # the held turn is cancelled, not waited for
        assert state(lab) == fresh
        assert (
            lab.root / "lab-settings" / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings"
        ).is_file()
    finally:
        held.set()
