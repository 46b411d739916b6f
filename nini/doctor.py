"""``nini doctor``: what this installation can do, and the reason for anything it cannot."""

from __future__ import annotations

import functools
import importlib.metadata
import logging
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from nini.config import Settings
from nini.fsutil import disk_checks
from nini.redact import redact_paths

log = logging.getLogger("nini.doctor")
# Packages nini's core cannot work without, then the ones later capabilities use.
REQUIRED_PACKAGES = ("pydantic", "pydantic-settings", "PyYAML", "typer")
OPTIONAL_PACKAGES = ("jupyter_server", "jupyter_client", "ipykernel", "nbformat", "pandas", "rpy2", "wordllama")
# What a missing optional package costs, and how to add it (the extras of pyproject.toml).
MISSING_HINTS = {
    "wordllama": "experience matching uses lexical overlap only; pip install 'nini[embeddings]' adds word embeddings"
}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    required: bool = True

    def to_dict(self) -> dict:
        return asdict(self)


def run_checks(settings: Settings) -> list[Check]:
    """Every check; one that fails to run is a failed check of its own, not the end of doctor
    (what a person runs when something is wrong must not crash on it)."""
    steps: list[tuple[str, Callable[[], Check | list[Check]]]] = [
        ("python", _python),
        *((f"package {name}", functools.partial(_package, name, required=True)) for name in REQUIRED_PACKAGES),
        *((f"package {name}", functools.partial(_package, name, required=False)) for name in OPTIONAL_PACKAGES),
        ("R", lambda: _r(settings)),
        ("kernels", lambda: _kernels(settings)),
        ("sandbox", lambda: _protections(settings)),
        ("NINI_HOME", lambda: _home(settings.home)),
        (
            "disks",
            lambda: [
                Check(*found)
                for found in disk_checks({"NINI_HOME": settings.home, "the workspaces": settings.sessions_dir})
            ],
        ),
        ("history database", lambda: _database(settings)),
        ("settings", lambda: _settings(settings)),
        ("experience", lambda: _experience(settings)),
        ("mcp", lambda: _mcp_servers(settings)),
        ("models", lambda: _models(settings)),
    ]
    checks: list[Check] = []
    for name, step in steps:
        try:
            found = step()
        except Exception as exc:  # noqa: BLE001 - reported as the check's failure; the log has the traceback
            log.exception("doctor: the %s check failed", name)
            found = Check(
                name, False, f"the check could not run ({type(exc).__name__}: {redact_paths(str(exc))})", required=False
            )
        checks.extend(found if isinstance(found, list) else [found])
    return checks


def _python() -> Check:
    version = ".".join(map(str, sys.version_info[:3]))
    ok = sys.version_info >= (3, 11)
    return Check("python", ok, version if ok else f"{version}: nini needs Python 3.11 or newer")


def _package(name: str, required: bool) -> Check:
    try:
        return Check(f"package {name}", True, importlib.metadata.version(name), required)
    except importlib.metadata.PackageNotFoundError:
        hint = MISSING_HINTS.get(name)
        return Check(f"package {name}", False, f"not installed: {hint}" if hint else "not installed", required)


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


def _kernels(settings: Settings) -> Check:
    """Where agent kernels run (``execution.kernels``): here in nini's sandbox, or on the gateway
    the Jupyter server is configured with, whose sandbox then applies."""
    from nini.execution.gateway import configured_gateway_url, host_of

    setting = settings.execution.kernels
    url = configured_gateway_url() if setting != "local" else None
    if url is not None:
        return Check(
            "kernels",
            True,
            f"inside the Jupyter server, agent kernels run on the gateway at {host_of(url)} "
            f"(execution.kernels '{setting}'); the sandbox there is the gateway's (its containers or pods), not "
            "nini's; the kernel's environment needs nini installed; R runs on the server itself; "
            "the CLI runs kernels here",
            required=False,
        )
    if setting == "gateway":
        return Check(
            "kernels",
            False,
            "execution.kernels is 'gateway' but no gateway is configured for the Jupyter "
            "server (--gateway-url, c.GatewayClient.url or JUPYTER_GATEWAY_URL): no kernel will start",
            required=False,
        )
    return Check(
        "kernels",
        True,
        f"agent kernels run on this machine (execution.kernels '{setting}'"
        + ("" if setting == "local" else ", no gateway configured")
        + ")",
        required=False,
    )


def _protections(settings: Settings) -> list[Check]:
    """Which of the sandbox's protections are active on this machine, and what is missing."""
    from nini.execution import guard, sandbox
    from nini.execution.isolation import USER_KERNEL_NOTICE
    from nini.rooted import openat2_available

    execution = settings.execution
    ok, detail = sandbox.probe_bwrap()
    if execution.sandbox == "none":
        checks = [Check("sandbox", False, "execution.sandbox is 'none': agent code runs unsandboxed", required=False)]
    else:
        checks = [Check("sandbox", ok, detail if ok else f"{detail}; agent code runs unsandboxed", required=False)]
    if checks[0].ok and execution.sandbox != "none":
        checks.append(_sandboxed_python(settings))
    if checks[0].ok:
        who = (
            (
                "root nini: bubblewrap keeps only CAP_SETUID/CAP_SETGID, then each session's code drops to a uid of "
                "its own (not a host account); new user namespaces refused by seccomp"
            )
            if sandbox.running_as_root()
            else (f"user namespace: uid {sandbox.SANDBOX_UID} inside, no capabilities, --disable-userns")
        )
        checks.append(Check("sandbox user", True, who, required=False))
    checks += _guards(checks[0].ok, guard.seccomp_available(), guard.landlock_abi())
    checks.append(
        Check(
            "limits",
            True,
            f"memory {execution.memory_limit_mb} MiB (R {settings.r.memory_limit_mb} MiB), "
            f"{execution.max_processes} processes, /tmp and /dev/shm {execution.tmp_size_mb} MiB each, "
            f"workspace quota {execution.workspace_quota_mb} MiB",
            required=False,
        )
    )
    checks.append(_resource_limits(settings))
    resolver = "openat2 (RESOLVE_BENEATH, no symlinks)" if openat2_available() else "a per-folder O_NOFOLLOW walk"
    checks.append(
        Check(
            "workspace files",
            True,
            f"nini opens workspace files beneath the root with {resolver}; a link or special file is refused",
            required=False,
        )
    )
    where = "%%nini, the sidebar's notebook kernel and run-code with kernel_id: the code " + USER_KERNEL_NOTICE
    if execution.approve_in_user_kernel:
        checks.append(
            Check(
                "user kernel",
                True,
                f"{where}; each step shows its code and waits until you allow it "
                "(once or for the session) or reject it",
                required=False,
            )
        )
    else:  # a warning: nothing stands between the model's code and your files then
        checks.append(
            Check(
                "user kernel",
                False,
                f"{where}, and runs WITHOUT asking: execution.approve_in_user_kernel "
                "is off (text in your data can make the model run code as you); turn it on in settings.json: "
                '"execution": {"approve_in_user_kernel": true}',
                required=False,
            )
        )
    return checks


def _sandboxed_python(settings: Settings) -> Check:
    """Start this interpreter inside the sandbox, as a kernel starts, and import nini and pandas there:
    bwrap working is not enough (a virtualenv the sandbox cannot see, say, stops every kernel)."""
    import subprocess
    import tempfile

    from nini.execution import sandbox
    from nini.execution.kernels import sandbox_limits

    with tempfile.TemporaryDirectory(dir=sandbox.runtime_base(), prefix="nini-doctor-") as tmp:
        workspace, runtime_dir = Path(tmp) / "workspace", Path(tmp) / "runtime"
        workspace.mkdir()
        runtime_dir.mkdir()
        uid = sandbox.PROBE_UID if sandbox.running_as_root() else None
        sandbox.prepare(workspace, runtime_dir, uid)
        command = sandbox.agent_command(
            [sys.executable, "-m", "nini.execution.probe"],
            "bwrap",
            sandbox_limits(settings.execution),
            uid=uid,
            workspace=workspace,
            runtime_dir=runtime_dir,
        )
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as exc:
            return Check("sandbox python", False, f"the interpreter cannot start in the sandbox: {exc}", required=False)
    if done.returncode == 0 and "sandboxed python ok" in done.stdout:
        return Check(
            "sandbox python",
            True,
            f"{sys.executable} starts inside the sandbox and imports nini and pandas",
            required=False,
        )
    reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1][:300]
    return Check(
        "sandbox python",
        False,
        f"{sys.executable} does not start inside the sandbox ({reason}); kernels will fail: "
        "put the interpreter where the sandbox can see it, or add its folder to execution.sandbox_read_only_paths",
        required=False,
    )


def _resource_limits(settings: Settings) -> Check:
    """What holds the memory and process limits here: control groups (which kind), or the RLIMITs
    alone, and what those miss."""
    from nini.execution import cgroups

    execution = settings.execution
    found = cgroups.placement(execution.cgroups, tuple(str(folder) for folder in execution.cgroup_folders))
    if found.mechanism == "none":
        return Check(
            "resource limits",
            False,
            f"RLIMITs only ({found.detail}): memory is each process's address "
            "space (RLIMIT_AS), which misses memfds, files in /tmp and /dev/shm and shared memory, and gives "
            "each forked process the whole limit again; processes are RLIMIT_NPROC, which counts every thread "
            "of the sandbox's user (a session's kernels in every nini process share it)",
            required=False,
        )
    detail = (
        f"{found.detail}: each kernel and R worker in a cgroup of its own, in one per session; its memory "
        "(memfds, tmpfs files and shared memory included, no swap) and its processes and threads counted for it alone"
    )
    missing = sorted(set(cgroups.CONTROLLERS) - found.holds)
    if missing:
        detail += f"; {' and '.join(missing)} by RLIMITs only (no such controller here)"
    return Check("resource limits", True, detail, required=False)


def _guards(sandboxed: bool, seccomp: bool, abi: int) -> list[Check]:
    """What stops programs (seccomp) and what Landlock adds, on this kernel."""
    if not sandboxed:
        return [
            Check(
                "programs", False, "agent code runs unsandboxed: nothing stops it from running programs", required=False
            )
        ]
    programs = Check(
        "programs",
        seccomp,
        "seccomp refuses execve and execveat to sandboxed code, the interpreter "
        "included: no program runs by any route; process pools fork (multiprocessing, joblib); "
        "fallocate and new user namespaces refused too"
        if seccomp
        else "seccomp is not available in this kernel: sandboxed kernels and R workers will not start",
        required=False,
    )
    if abi == 0:
        return [
            programs,
            Check(
                "landlock",
                False,
                "not in this kernel: sandboxed code's changes are kept to its folders by the read-only mounts alone",
                required=False,
            ),
        ]
    extra = (["TCP bind/connect refused"] if abi >= 4 else []) + (
        ["signals and abstract sockets scoped"] if abi >= 6 else []
    )
    return [
        programs,
        Check(
            "landlock",
            True,
            f"ABI {abi}: changes only beneath the writable folders, execution "
            "granted nowhere" + "".join(f"; {e}" for e in extra),
            required=False,
        ),
    ]


def _home(home: Path) -> Check:
    try:
        home.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=home, prefix=".doctor-"):
            pass
    except OSError as exc:
        return Check("NINI_HOME", False, f"{home} is not writable: {exc.strerror or exc}")
    return Check("NINI_HOME", True, str(home))


def _database(settings: Settings) -> list[Check]:
    """A history nini cannot read or write is a failure here, not a new empty history or a failed
    write at the next command."""
    from nini.history.health import database_checks

    return [Check(*found) for found in database_checks(settings.database, settings.home)]


def _experience(settings: Settings) -> Check:
    """The team experience library's INDEX.md (the project's: ``nini experience validate`` in the project)."""
    from nini.memory.experience.index import Library

    team = Library("team", settings.experience_team_dir)
    if not team.index_path.exists():
        return Check("experience", True, "team library empty (nini remember adds to it)", required=False)
    parsed = team.read()
    if parsed.problems:
        return Check(
            "experience",
            False,
            f"team INDEX.md: {len(parsed.problems)} problem(s), e.g. {parsed.problems[0]}; "
            "see nini experience validate",
            required=False,
        )
    return Check(
        "experience", True, f"team library: {len(parsed.active())} active of {len(parsed.rows)}", required=False
    )


def _mcp_servers(settings: Settings) -> list[Check]:
    """Each enabled MCP server of ``mcp.servers``: started and its tools listed, or why not."""
    if not any(server.enabled for server in settings.mcp.servers):
        return []
    import asyncio

    from nini.agent.tasks import skill_registry
    from nini.mcp.client import check_servers

    found = asyncio.run(check_servers(settings, skill_registry(settings, None)))
    return [
        Check(
            f"mcp {name}",
            problem is None,
            "starts and lists its tools" if problem is None else f"left out of runs: {problem}",
            required=False,
        )
        for name, problem in found.items()
    ]


def _settings(settings: Settings) -> Check:
    if settings.warnings:
        return Check("settings", False, "; ".join(settings.warnings), required=False)
    source = "from settings.json" if settings.settings_path.exists() else "defaults (no settings.json)"
    return Check("settings", True, source, required=False)


def _models(settings: Settings) -> list[Check]:
    """One check per purpose: the chain the router would try, or why no model can serve it."""
    from nini.agent.llm import PURPOSES, ModelRouter

    if not settings.llm.providers:
        return [
            Check(
                "models",
                False,
                "no LLM provider configured (llm.providers in settings.json); the agent cannot run",
                required=False,
            )
        ]
    router = ModelRouter.from_settings(settings)
    checks = []
    for purpose in PURPOSES:
        facts = router.report(purpose)
        if facts["error"] is not None:
            checks.append(Check(f"model {purpose}", False, facts["error"], required=False))
            continue
        detail = " -> ".join(f"{c['provider']}/{c['model']} ({c['source']})" for c in facts["chain"])
        # a route the user set but cannot be used right now is worth seeing even when others work
        if facts["skipped"]:
            detail += "; skipped: " + "; ".join(
                f"{c['provider']}/{c['model']} ({c['source']}): {c['reason']}" for c in facts["skipped"]
            )
        checks.append(Check(f"model {purpose}", True, detail, required=False))
    return checks
