"""``nini doctor``: what this installation can do, and the reason for anything it cannot."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from nini.config import Settings

# Packages nini's core cannot work without, then the ones later capabilities use.
REQUIRED_PACKAGES = ("pydantic", "pydantic-settings", "PyYAML", "typer")
OPTIONAL_PACKAGES = ("jupyter_server", "jupyter_client", "ipykernel", "nbformat", "pandas", "rpy2")


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def run_checks(settings: Settings) -> list[Check]:
    return [
        _python(),
        *(_package(name, required=True) for name in REQUIRED_PACKAGES),
        *(_package(name, required=False) for name in OPTIONAL_PACKAGES),
        _r(settings),
        _sandbox(),
        _home(settings.home),
        _settings(settings),
        *_models(settings),
    ]


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, version if ok else f"{version}: nini needs Python 3.11 or newer")


def _package(name: str, required: bool) -> Check:
    try:
        return Check(f"package {name}", True, importlib.metadata.version(name), required)
    except importlib.metadata.PackageNotFoundError:
        return Check(f"package {name}", False, "not installed", required)


def _r(settings: Settings) -> Check:
    from nini.skills.builtin.run_r import r_binary, r_status

    usable, detail = r_status(settings)
    if not usable:
        return Check("R", False, f"{detail}; run_r_code is not offered", required=False)
    binary = r_binary()
    try:
        first_line = subprocess.run(
            [str(binary), "--version"], capture_output=True, text=True, timeout=20, check=True
        ).stdout.splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError) as exc:
        return Check("R", False, f"{binary} does not run: {exc}; run_r_code will fail", required=False)
    return Check("R", True, f"{first_line} with rpy2 (run_r_code offered)", required=False)


def _sandbox() -> Check:
    from nini.execution.sandbox import probe_bwrap

    ok, detail = probe_bwrap()
    return Check("sandbox", ok, detail if ok else f"{detail}; code runs unsandboxed", required=False)


def _home(home: Path) -> Check:
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("NINI_HOME", False, f"{home} is not writable: {exc.strerror or exc}")
    return Check("NINI_HOME", True, str(home))


def _settings(settings: Settings) -> Check:
    if settings.warnings:
        return Check("settings", False, "; ".join(settings.warnings), required=False)
    source = "from settings.json" if settings.settings_path.exists() else "defaults (no settings.json)"
    return Check("settings", True, source, required=False)


def _models(settings: Settings) -> list[Check]:
    """One check per purpose: the chain the router would try, or why no model can serve it."""
    from nini.agent.llm import PURPOSES, ModelRouter
    from nini.errors import NiniError

    if not settings.llm.providers:
        return [Check("models", False, "no LLM provider configured (llm.providers in settings.json); "
                      "the agent cannot run", required=False)]  # fmt: skip
    router = ModelRouter(settings.llm)
    checks = []
    for purpose in PURPOSES:
        vision = purpose == "image_analysis"
        try:
            chain = router.chain(purpose, require_vision=vision)
        except NiniError as exc:
            checks.append(Check(f"model {purpose}", False, exc.message, required=False))
            continue
        detail = " -> ".join(f"{c.provider}/{c.model} ({c.source})" for c in chain)
        # a route the user set but cannot be used right now is worth seeing even when others work
        skipped = [c for c in router.explain(purpose, require_vision=vision) if not c["usable"]]
        if skipped:
            detail += "; skipped: " + "; ".join(f"{c['provider']}/{c['model']} ({c['source']}): {c['reason']}" for c in skipped)
        checks.append(Check(f"model {purpose}", True, detail, required=False))
    return checks
