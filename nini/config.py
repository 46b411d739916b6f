"""Settings: the one place that reads ``NINI_*`` environment variables and ``settings.json``.

Precedence, lowest first: field defaults, ``NINI_HOME/settings.json``, ``NINI_*`` environment
variables (nested fields with ``__``, e.g. ``NINI_SKILLS__EXTRA_DIRS='["/srv/skills"]'``),
explicit arguments. A value that cannot be used never costs more than its own field: a file
that fails to parse, or a field with a bad value, is logged as a warning and that value is
dropped: the field falls back to the source below it (a bad ``NINI_*`` value to settings.json),
finally to its default. The file is never rewritten by loading.
"""

from __future__ import annotations

import fnmatch
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from nini.language import Language, words_language

SETTINGS_FILE = "settings.json"
# the server's own secrets, whatever server.secret_env_deny adds: a provider's key variable is never one
SERVER_SECRET_ENV = ("JUPYTER_TOKEN", "JPY_*", "JUPYTERHUB_*", "NINI_DATABASE_URL")

log = logging.getLogger("nini.config")


def default_home() -> Path:
    return Path("~/.nini").expanduser()


class SkillsSettings(BaseModel):
    """Where skills come from beyond the standard roots."""

    model_config = ConfigDict(extra="ignore")

    extra_dirs: list[Path] = Field(
        default_factory=list,
        description="More folders scanned for SKILL.md (and trusted skill.py), after the user "
        "skills dir and before nini's bundled skills. Relative paths are taken from NINI_HOME.",
    )


class ExecutionSettings(BaseModel):
    """How agent code runs: sandbox, static policy, limits and what goes back to the model."""

    model_config = ConfigDict(extra="ignore")

    sandbox: Literal["auto", "bwrap", "none"] = Field(
        "auto",
        description="auto: bubblewrap when it works here, else unsandboxed (nini doctor says which); "
        "bwrap: refuse to start a kernel without it; none: never sandbox (trusted use only).",
    )
    warn_unsandboxed: bool = Field(
        True,
        description="Whether the CLI's commands that run code (run-code, run-r, ask, mcp) print one warning "
        "line on stderr when that code runs without the sandbox (execution.sandbox none, or auto where bubblewrap "
        "is missing or cannot run); false silences it, for a trusted machine where that is known and wanted.",
    )
    kernels: Literal["auto", "local", "gateway"] = Field(
        "auto",
        description="Where the sessions' Python kernels run. local: on this machine, in nini's sandbox "
        "(execution.sandbox); gateway: on the Kernel/Enterprise Gateway the Jupyter server was started with "
        "(--gateway-url), in the gateway's sandbox (its containers or pods), the workspace's files carried over "
        "the kernel protocol; auto: the gateway when the server has one, else local. R always runs locally.",
    )
    gateway_kernel_name: str | None = Field(
        None,
        description="The gateway's kernel spec for agent kernels (its environment must have nini "
        "installed); unset: the gateway's default spec.",
    )
    python_policy: Literal["strict", "off"] = Field(
        "strict",
        description="strict: refuse agent Python that imports os/subprocess/socket/... "
        "or calls eval/exec/open outside the workspace, before it runs; off: no static check.",
    )
    memory_limit_mb: int = Field(
        2048,
        ge=256,
        description="Memory of each agent kernel in MiB: its cgroup's limit (all its processes, with "
        "what they hold in memfds, shared memory and files in its /tmp and /dev/shm; past it the kernel is stopped, "
        "TOO_LARGE) and each process's address space (RLIMIT_AS: an allocation past it is a MemoryError). Without "
        "cgroups (nini doctor says) only the address space is limited.",
    )
    timeout_s: float = Field(
        60, gt=0, le=86400, description="Default run_code timeout in seconds; a call may set its own."
    )
    output_cap_chars: int = Field(
        8000,
        ge=200,
        description="Longest tool output sent back to the model; a longer one is written whole to the workspace "
        "(executions/ID/stdout.txt) and the record keeps its head and tail.",
    )
    output_max_mb: int = Field(
        4,
        ge=1,
        le=1024,
        description="Largest single output of a run in MiB (a display, a result's value, an error, each "
        "of stdout and stderr), capped as it arrives: a larger one is kept as its size and a preview (a text's head; "
        "for images and HTML a note with the size and mime type) with a marker, and nini's process refuses any "
        "message from a sandboxed kernel larger than this plus 1 MiB (TOO_LARGE; the kernel is restarted).",
    )
    run_outputs_max_mb: int = Field(
        16,
        ge=1,
        le=65536,
        description="Most output one run keeps, in MiB, all outputs together; past it later "
        "outputs are counted, not kept, and the run says how much it left out.",
    )
    run_outputs_max_count: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="Most outputs one run keeps (displays, results, errors, stream parts); "
        "past it later outputs are counted, not kept.",
    )
    max_processes: int = Field(
        64,
        ge=8,
        le=4096,
        description="Processes and threads each agent kernel or R worker may have at once "
        "(its cgroup's pids limit, counted for it alone); a fork bomb stops there, the kernel stays usable. Without "
        "cgroups it is RLIMIT_NPROC, which counts every task of the session's sandbox user, all its kernels.",
    )
    cgroups: Literal["auto", "off"] = Field(
        "auto",
        description="auto: memory and processes of each agent kernel and R worker limited by a control group "
        "of its own where this machine offers one (execution.cgroup_folders, else nini's own cgroup when nini may "
        "write there, as root; else systemd-run --scope); off: RLIMITs only (they miss memfds, tmpfs and shared "
        "memory, and count a uid's threads). nini doctor says which holds.",
    )
    cgroup_folders: list[Path] = Field(
        default_factory=list,
        description="Control-group folders delegated to nini's user, where it makes its groups: "
        "one per controller on cgroup v1 (e.g. /sys/fs/cgroup/memory/nini and /sys/fs/cgroup/pids/nini), one on v2 "
        "(holding nini's own cgroup, as delegation requires). Empty: nini's own cgroup, else systemd-run --scope.",
    )
    max_artifacts_per_run: int = Field(
        200,
        ge=1,
        le=100_000,
        description="Charts one run may save (matplotlib figures, R plot pages, rich "
        "outputs); past it the rest are closed unsaved, with a warning, so a plot flood cannot fill the workspace.",
    )
    tmp_size_mb: int = Field(
        512, ge=16, description="Size of the sandbox's private /tmp and of its /dev/shm in MiB (each is host RAM)."
    )
    workspace_quota_mb: int = Field(
        10240,
        ge=16,
        description="Most a session workspace may hold, in MiB (a file counts the larger of its size "
        "and its blocks): no file the agent writes can be larger (RLIMIT_FSIZE), a run that goes over it is stopped "
        "(TOO_LARGE), and no run starts while the workspace holds that much.",
    )
    workspace_max_files: int = Field(
        20_000,
        ge=100,
        le=10_000_000,
        description="Most files (and folders and links) a session workspace may hold: "
        "a run that makes more is stopped (TOO_LARGE), and no run starts while it holds that many. Also bounds what "
        "a count of the workspace costs (it stops there).",
    )
    sandbox_read_only_paths: list[Path] = Field(
        default_factory=list,
        description="Host folders the sandbox shows read-only besides what analysis needs "
        "(interpreter, R, system libraries), e.g. a shared data folder or an editable library.",
    )
    approve_in_user_kernel: bool = Field(
        True,
        description="Each step nini runs in your own notebook kernel (%%nini, the sidebar's notebook kernel, "
        "run-code with kernel_id), which is not sandboxed, waits until you see its code and allow it (once, or for "
        "the session); off: such steps run without asking, and nini doctor and the sidebar say so.",
    )
    variable_copy_max_mb: int = Field(
        512,
        ge=0,
        le=1_048_576,
        description="Largest notebook variable (pickled, in MiB) copied into the "
        "sandboxed kernel when the agent asks for it; a bigger one is only described, and the agent proposes "
        "a notebook cell instead. 0 copies none.",
    )
    variable_prefetch_mb: int = Field(
        64,
        ge=0,
        le=1_048_576,
        description="When a turn asked from a notebook starts (sandbox first), the "
        "notebook's data variables are copied into the sandboxed kernel, smallest first, up to this many MiB in all, "
        "while the model thinks; the step that uses them runs at once. 0: only what the agent names is copied.",
    )
    approval_timeout_s: float = Field(
        600, gt=0, le=86400, description="How long a step waits for your approval before it is refused."
    )
    cull_idle_seconds: float = Field(
        3600,
        ge=0,
        le=30 * 86400,
        description="Seconds a session's own Python kernel or R worker may sit idle (no "
        "run in progress, none started for that long) before nini shuts it down to free its memory, as Jupyter's "
        "cull_idle_timeout does; the session's next step starts a new one and says its variables are gone (the "
        "workspace's files and datasets stay). A busy one is never culled, nor a notebook kernel nini only borrows. "
        "0: never.",
    )
    cull_interval_seconds: float = Field(
        60,
        gt=0,
        le=86400,
        description="How often nini looks for idle kernels and R workers, in seconds (at least "
        "every execution.cull_idle_seconds).",
    )
    max_live_kernels: int = Field(
        16,
        ge=0,
        le=10_000,
        description="Most sessions' own Python kernels live at once in one nini process (a "
        "Jupyter server): starting one more first shuts down the least recently used idle one. When all are busy "
        "the new one starts anyway (a step never waits for another session's long run) and the cap is restored as "
        "they go idle. 0: no cap. R workers have their own cap, r.max_live_workers.",
    )


class RSettings(BaseModel):
    """Limits and allowances of the R worker behind run_r_code (on/off is ``r_enabled``)."""

    model_config = ConfigDict(extra="ignore")

    memory_limit_mb: int = Field(
        1024,
        ge=256,
        description="Memory of each session's R worker in MiB: its cgroup's limit (with what it holds "
        "in memfds, shared memory and its /tmp and /dev/shm; past it the worker is stopped, TOO_LARGE) and its address "
        "space (RLIMIT_AS). Without cgroups only the address space is limited.",
    )
    timeout_s: float = Field(
        120, gt=0, le=86400, description="Default run_r_code timeout in seconds; past it the worker is restarted."
    )
    extra_packages: list[str] = Field(
        default_factory=list,
        description="R packages agent code may load (library, require, pkg::) beyond nini's default list.",
    )
    max_live_workers: int = Field(
        8,
        ge=0,
        le=10_000,
        description="Most sessions' R workers live at once in one nini process, counted apart "
        "from the Python kernels (execution.max_live_kernels): starting one more first shuts down the least "
        "recently used idle one; when all are busy it starts anyway. Idle workers are shut down after "
        "execution.cull_idle_seconds, as kernels are. 0: no cap.",
    )


class SkillEnhanceSettings(BaseModel):
    """When a good agent run becomes a skill on its own (``nini.agent.enhance``)."""

    model_config = ConfigDict(extra="ignore")

    auto_enhance: bool = Field(
        False,
        description="After a run that ends normally and scores high enough, create or improve a skill from "
        "it at once (task:skill:enhance); the answer is never changed, a note follows it.",
    )
    trigger_profile: str = Field(
        "conservative",
        description="How much a run must show to trigger: conservative (score 3 of 6), neutral (2), "
        "aggressive (1); anything else counts as conservative.",
    )
    max_enhance_context_chars: int = Field(
        50_000, ge=1, description="Most characters of the run's record the enhancing sub-agent reads."
    )
    sub_agent_timeout_ms: int = Field(300_000, ge=1, description="How long the enhancement may take, in milliseconds.")
    skills_dir: Path | None = Field(
        None,
        description="The one folder the enhancing sub-agent (the agent's save_skill) writes skills into: unset, "
        "the user skills folder (NINI_HOME/skills; a named user's own on a shared server); else one of "
        "skills.extra_dirs (relative paths from NINI_HOME). Saves are refused (POLICY_VIOLATION) when it names a "
        "project's or nini's bundled folder or one nini does not read.",
    )


class UISettings(BaseModel):
    """How nini talks to people."""

    model_config = ConfigDict(extra="ignore")

    language: Literal["auto", "zh", "en"] = Field(
        "auto",
        description="Language of nini's words: CLI messages, refusals, previews, templates and reports. "
        "zh or en forces one; auto follows the client (the JupyterLab sidebar's language, which is JupyterLab's) "
        "and, where no client says one (the CLI, MCP, the magics, a REST call without X-Nini-Language), the "
        "locale: Chinese when the first non-empty of LC_ALL, LC_MESSAGES, LANG starts with zh, else English. "
        "A command's --lang beats all of these.",
    )

    @property
    def current_language(self) -> Language:
        """The language of nini's words now: a command's ``--lang``, else ``language``, else (auto)
        the language of the client this work is for, else the locale's (``nini.language``)."""
        return words_language(self.language)


class ReportSettings(BaseModel):
    """How the layered report (``nini report``, ``generate_report``) writes values."""

    model_config = ConfigDict(extra="ignore")

    decimals: int = Field(
        4,
        ge=1,
        le=15,
        description="Significant digits of the numbers in a report's findings and tables "
        "(0.5623850983416314 reads 0.5624 with 4); whole parts are never cut (2857565 stays).",
    )
    model_text: bool = Field(
        True,
        description="Let the model for purpose report write the summary and conclusions from the key "
        "findings when a model is configured; its text is used only when every number in it is in the findings.",
    )


class ExperienceSettings(BaseModel):
    """Experience memory: what a team and a project learned, captured from runs and brought back."""

    model_config = ConfigDict(extra="ignore")

    enabled: bool = Field(
        True, description="Match experiences into each run's prompt and capture candidates at its end."
    )
    team_dir: Path | None = Field(
        None,
        description="The team library (INDEX.md, standards/, knowledge/), a folder a team can share; "
        "unset means NINI_HOME/experience/team.",
    )
    team_writable: bool = Field(
        True,
        description="Whether this process may change the team library (deposit, deprecate, roll back); "
        "a hub gives false to users who only read it and true to its maintainers (the folder's permissions "
        "should say the same: this makes the refusal clear and holds where they cannot, e.g. for root).",
    )
    match_threshold: float = Field(
        0.3, ge=0, le=2, description="Lowest score of a match (similarity plus stage bonus)."
    )
    max_matches: int = Field(5, ge=0, le=50, description="Most experiences one run is warned about.")


class PreferenceSettings(BaseModel):
    """Preference learning: rules the user writes, rules learned from their feedback, injected into prompts."""

    model_config = ConfigDict(extra="ignore")

    learning: bool = Field(
        True, description="Learn implicit preferences from feedback (explicit ones are injected either way)."
    )
    injection: bool = Field(True, description="Put the selected preferences into each run's prompt.")
    max_items: int = Field(8, ge=5, le=12, description="Most preferences one prompt carries.")
    token_budget: int = Field(400, ge=50, le=4000, description="Most tokens of the preferences block.")
    confidence_floor: float = Field(0.6, ge=0, le=1, description="Lowest confidence of an injected preference.")
    timeout_s: float = Field(
        30, gt=0, le=600, description="How long one feedback may take (a model reading the comment included)."
    )


class MCPServerSettings(BaseModel):
    """An MCP server whose tools the agent may call (``mcp__<name>__<tool>``)."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(..., min_length=1, description="Its name in tool names and in nini doctor.")
    command: str | None = Field(None, description="stdio: the program to start (with args).")
    args: list[str] = Field(default_factory=list, description="stdio: the program's arguments.")
    url: str | None = Field(None, description="streamable HTTP: the endpoint URL (instead of command).")
    env: list[str] = Field(
        default_factory=list, description="Names of environment variables passed on (secrets by name)."
    )
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="HTTP: headers of each request; ${NAME} is the "
        "variable NAME of nini's environment, for a NAME listed in env.",
    )
    enabled: bool = True

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerSettings:
        if bool(self.command) == bool(self.url):
            raise ValueError(f"MCP server {self.name!r} needs a command (stdio) or a url (HTTP), not both or neither")
        if self.headers and not self.url:
            raise ValueError(f"MCP server {self.name!r}: headers are for an HTTP server (url)")
        return self


class LimitsSettings(BaseModel):
    """Caps on the text handed to nini, on every path (CLI, MCP, REST, the agent's tool calls): one place."""

    model_config = ConfigDict(extra="ignore")

    max_code_chars: int = Field(
        1_000_000,
        ge=1000,
        le=50_000_000,
        description="Most characters of the code one step runs (run-code, run-r, "
        "a model's or an MCP client's code, REST's run-code); longer code is refused with TOO_LARGE before anything "
        "is stored or run. Real analysis code is a few thousand characters; the default leaves room "
        "for generated code.",
    )
    max_label_chars: int = Field(
        200,
        ge=10,
        le=10_000,
        description="Most characters of a step's label (--label, a tool call's label); longer is TOO_LARGE.",
    )
    max_title_chars: int = Field(
        200,
        ge=80,
        le=10_000,
        description="Most characters of a session's title (a new session's, a rename in the "
        "sidebar or PATCH /nini/api/sessions/ID); longer is TOO_LARGE. At least 80: titles nini "
        "makes (a question's start, a "
        "notebook's name) are cut to 80.",
    )


class MCPSettings(BaseModel):
    """MCP servers whose tools join the agent's."""

    model_config = ConfigDict(extra="ignore")

    servers: list[MCPServerSettings] = Field(
        default_factory=list, description="The servers, each {name, command, args | url, env, enabled}."
    )


class ServerSettings(BaseModel):
    """Limits of the Jupyter server extension's REST API, and who administers it."""

    model_config = ConfigDict(extra="ignore")

    max_body_bytes: int = Field(
        10 * 1024 * 1024,
        ge=1024,
        description="Largest request body nini's REST endpoints accept, in bytes; "
        "a bigger one is refused with 413 TOO_LARGE before it is read or recorded.",
    )
    max_upload_bytes: int = Field(
        200 * 1024 * 1024,
        ge=1024,
        description="Largest file POST /nini/api/sessions/ID/files accepts, in bytes (413 TOO_LARGE above it).",
    )
    admins: list[str] = Field(
        default_factory=list,
        description="Jupyter user names that see and use every user's sessions (on a hub, "
        "its admins do too) and may change model providers and nini's settings; everyone else sees only their own "
        "sessions and the settings read-only.",
    )
    secret_env_deny: list[str] = Field(
        default_factory=list,
        description="More names (shell patterns: DB_*) of environment variables that hold the "
        "server's own secrets, which no model provider may name as its api_key_env; JUPYTER_TOKEN, JPY_*, "
        "JUPYTERHUB_* and NINI_DATABASE_URL always are.",
    )

    def is_secret_env(self, name: str) -> bool:
        """Whether environment variable ``name`` holds one of the server's own secrets (never sent to a model)."""
        return any(
            fnmatch.fnmatchcase(name.upper(), pattern.upper())
            for pattern in (*SERVER_SECRET_ENV, *self.secret_env_deny)
        )


class ProviderSettings(BaseModel):
    """One LLM endpoint. The key is never stored here: only the name of the variable holding it."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(..., min_length=1, description="How purposes and preferred_provider refer to it.")
    kind: Literal["openai", "anthropic", "replay"] = Field(
        "openai",
        description="openai: any OpenAI-compatible endpoint (OpenAI, DeepSeek, Qwen, Ollama, vLLM, ...); "
        "anthropic: the Anthropic API (extra 'anthropic'); replay: a recorded script (the demo).",
    )
    base_url: str | None = Field(None, description="Endpoint URL, e.g. http://127.0.0.1:11434/v1 for Ollama.")
    model: str = Field(..., min_length=1, description="The model used when a purpose names none.")
    api_key_env: str | None = Field(
        None, description="Name of the environment variable holding the API key; unset for keyless local servers."
    )
    vision_models: list[str] = Field(default_factory=list, description="Models of this provider that accept images.")
    script: Path | None = Field(None, description="replay only: the recorded JSON script (relative to NINI_HOME).")
    enabled: bool = True
    # The price of this provider's tokens, for the cost a turn's footer shows: unset (the default),
    # no cost is shown for a turn that called it; a local model is free (0).
    input_per_mtok: float | None = Field(
        None,
        ge=0,
        description="Price of a million prompt tokens; with output_per_mtok, the sidebar shows each turn's cost.",
    )
    output_per_mtok: float | None = Field(None, ge=0, description="Price of a million completion tokens.")
    currency: str | None = Field(
        None, min_length=1, max_length=8, description="The currency of the prices (USD, CNY, ...); unset: USD."
    )

    @model_validator(mode="before")
    @classmethod
    def _replay_needs_no_model(cls, values: Any) -> Any:
        """A replay provider answers from its script whatever the model: its model defaults to "replay"."""
        if isinstance(values, dict) and values.get("kind") == "replay" and not values.get("model"):
            return {**values, "model": "replay"}
        return values


class PurposeRoute(BaseModel):
    """Which provider and model serve one purpose (either may be left to the fallbacks)."""

    model_config = ConfigDict(extra="ignore")

    provider: str | None = None
    model: str | None = None


class LLMSettings(BaseModel):
    """The models nini may call, and which one serves each purpose (see nini.agent.llm)."""

    model_config = ConfigDict(extra="ignore")

    providers: list[ProviderSettings] = Field(
        default_factory=list, description="Configured endpoints; their order is the default priority."
    )
    preferred_provider: str | None = Field(
        None, description="Tried after a purpose's own route and its fallback purpose."
    )
    purposes: dict[str, PurposeRoute] = Field(
        default_factory=dict,
        description="purpose -> {provider, model}; purposes: chat, analysis, fast, planning, "
        "verification, deep_reasoning, title_generation, summarize, image_analysis, report.",
    )
    request_timeout_s: float = Field(120, gt=0, le=3600, description="Timeout of one HTTP request to a model.")
    max_retries: int = Field(3, ge=0, le=10, description="Retries (with backoff) of a request answered 429 or 5xx.")
    # why configured providers were left out when the settings were loaded (NO_MODEL_AVAILABLE names them)
    _rejected: list[str] = PrivateAttr(default_factory=list)

    @property
    def rejected(self) -> list[str]:
        return list(self._rejected)

    @field_validator("providers")
    @classmethod
    def _unique_names(cls, providers: list[ProviderSettings]) -> list[ProviderSettings]:
        names = [p.name for p in providers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"provider names must be unique; repeated: {', '.join(duplicates)}")
        return providers


class AgentSettings(BaseModel):
    """How long an agent run may go on, and what its task summaries log."""

    model_config = ConfigDict(extra="ignore")

    max_iterations: int = Field(30, ge=1, le=500, description="Model calls per run before it stops unfinished.")
    max_consecutive_failures: int = Field(
        3, ge=1, le=50, description="Tool calls failing in a row before the run stops unfinished."
    )
    task_max_iterations: int = Field(15, ge=1, le=500, description="Model calls per task:* sub-agent run.")
    context_max_tokens: int = Field(
        64_000,
        ge=1000,
        description="Older turns past this many tokens are left out of the model's context "
        "(the store keeps them); the newest turn is always sent.",
    )
    summary_timeout_s: float = Field(30, gt=0, le=600, description="How long a task summary waits for the model.")
    summary_log_preview: bool = Field(
        True, description="Task-summary log lines carry a short preview of the raw result (sha256 always)."
    )
    notebook_context_tokens: int = Field(
        2000,
        ge=0,
        le=100_000,
        description="Tokens of the prompt for the notebook's variables (largest first); 0 leaves them out.",
    )
    notebook_cells_tokens: int = Field(
        4000,
        ge=0,
        le=100_000,
        description="Tokens of the prompt for the notebook's cells sent from the sidebar "
        "(the active cell and those above it, plus attached ones); 0 leaves them out.",
    )


class Settings(BaseSettings):
    """All of nini's configuration. Build it with ``load_settings()``, not directly."""

    model_config = SettingsConfigDict(env_prefix="NINI_", env_nested_delimiter="__", extra="ignore")

    home: Path = Field(
        default_factory=default_home,
        description="NINI_HOME: settings.json, nini.db, user skills, snapshot, logs and sessions. "
        "Only from the environment or an argument, since settings.json lives inside it.",
    )
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = Field(
        "INFO", description="Threshold of the JSON-lines log in NINI_HOME/logs/."
    )
    r_enabled: bool = Field(
        True, description="Offer R (run_r_code) when R and rpy2 are usable; false turns R off entirely."
    )
    skills: SkillsSettings = Field(default_factory=SkillsSettings)
    execution: ExecutionSettings = Field(default_factory=ExecutionSettings)
    r: RSettings = Field(default_factory=RSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    agent: AgentSettings = Field(default_factory=AgentSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    ui: UISettings = Field(default_factory=UISettings)
    report: ReportSettings = Field(default_factory=ReportSettings)
    skill_enhance: SkillEnhanceSettings = Field(default_factory=SkillEnhanceSettings)
    experience: ExperienceSettings = Field(default_factory=ExperienceSettings)
    preferences: PreferenceSettings = Field(default_factory=PreferenceSettings)
    mcp: MCPSettings = Field(default_factory=MCPSettings)
    limits: LimitsSettings = Field(default_factory=LimitsSettings)
    database_url: str | None = Field(
        None,
        description="NINI_DATABASE_URL: SQLAlchemy URL of the history store (e.g. PostgreSQL for a hub); "
        "unset means the SQLite file NINI_HOME/nini.db in WAL mode.",
    )
    session_owner: str | None = Field(
        None,
        description="NINI_SESSION_OWNER: whose sessions this process makes and sees when no Jupyter identity "
        "names the caller (the CLI, the magics, a server's token login); a hub sets it to the user's name.",
    )

    _warnings: list[str] = PrivateAttr(default_factory=list)

    # pydantic-settings names each source parameter; only init_settings is used, the rest are **kwargs
    @classmethod
    def settings_customise_sources(cls, settings_cls, init_settings, **_other_sources):  # type: ignore[override]
        # load_settings() reads the environment and the file itself, field by field, so that one
        # bad value falls back alone instead of failing the whole object.
        return (init_settings,)

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _resolve_paths(self) -> Settings:
        self.home = self.home.expanduser()
        self.skills.extra_dirs = [
            p if p.is_absolute() else self.home / p for p in (d.expanduser() for d in self.skills.extra_dirs)
        ]
        self.execution.sandbox_read_only_paths = [
            p if p.is_absolute() else self.home / p
            for p in (d.expanduser() for d in self.execution.sandbox_read_only_paths)
        ]
        if self.skill_enhance.skills_dir is not None:
            folder = self.skill_enhance.skills_dir.expanduser()
            self.skill_enhance.skills_dir = folder if folder.is_absolute() else self.home / folder
        if self.experience.team_dir is not None and not self.experience.team_dir.expanduser().is_absolute():
            self.experience.team_dir = self.home / self.experience.team_dir.expanduser()
        for provider in self.llm.providers:
            if provider.script is not None and not provider.script.expanduser().is_absolute():
                provider.script = self.home / provider.script.expanduser()
        return self

    @property
    def warnings(self) -> list[str]:
        """What loading had to ignore, for ``nini doctor``."""
        return list(self._warnings)

    @property
    def settings_path(self) -> Path:
        return self.home / SETTINGS_FILE

    @property
    def user_skills_dir(self) -> Path:
        return self.home / "skills"

    @property
    def experience_team_dir(self) -> Path:
        return (self.experience.team_dir or self.home / "experience" / "team").expanduser()

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def snapshot_path(self) -> Path:
        return self.home / "SKILLS_SNAPSHOT.md"

    @property
    def skills_state_path(self) -> Path:
        return self.home / "skills_state.json"

    @property
    def sessions_dir(self) -> Path:
        return self.home / "sessions"

    @property
    def database(self) -> str:
        """The store's SQLAlchemy URL: ``database_url`` or the SQLite file in NINI_HOME."""
        return self.database_url or f"sqlite:///{self.home / 'nini.db'}"


def resolve_home(home: Path | str | None = None) -> Path:
    """NINI_HOME as ``load_settings`` will use it, without reading anything else (for early logging)."""
    env_home = _read_env([]).get("home")
    return (Path(home) if home else Path(env_home) if env_home else default_home()).expanduser()


def load_settings(home: Path | str | None = None, **overrides: Any) -> Settings:
    """Read defaults, ``settings.json`` and ``NINI_*`` into a ``Settings``, never failing on bad values."""
    warnings: list[str] = []
    env = _read_env(warnings)
    env_home = env.pop("home", None)
    home_path = Path(home) if home else Path(env_home) if env_home else default_home()
    file_values = _read_file(home_path.expanduser() / SETTINGS_FILE, warnings)
    if file_values.pop("home", None) is not None:
        warnings.append(f"{SETTINGS_FILE}: 'home' is ignored there; set NINI_HOME instead")
    for key in file_values.keys() - Settings.model_fields.keys():
        warnings.append(f"{SETTINGS_FILE}: unknown setting {key!r} ignored")
    settings = _validate_with_fallback(
        {"file": file_values, "environment": env, "argument": dict(overrides)}, home_path, warnings
    )
    for message in warnings:
        log.warning(message)
    settings._warnings = warnings
    settings.llm._rejected = [w for w in warnings if w.startswith("setting llm.providers")]
    return settings


def save_setting(home: Path, key: str, value: Any) -> Path:
    """Set ``key`` (dotted: ``skill_enhance.auto_enhance``) in ``home``'s settings.json, keeping the
    rest of the file; atomic. INVALID_ARGUMENT when the file is not valid JSON (it is not replaced)."""
    return update_setting(home, key, lambda _current: value)


def update_setting(home: Path, key: str, change: Callable[[Any], Any]) -> Path:
    """Replace the value at ``key`` (dotted) in ``home``'s settings.json by ``change(current)``
    (``current`` is None when unset), keeping the rest of the file; atomic. A read-modify-write
    in one place, so that editing one item of a list (``llm.providers``) keeps the others.
    INVALID_ARGUMENT when the file is not valid JSON (it is not replaced); ``change`` may raise too."""
    from nini.errors import ErrorCode, NiniError
    from nini.fsutil import atomic_write_text

    path = Path(home) / SETTINGS_FILE
    try:
        values = json.loads(path.read_bytes().decode("utf-8-sig")) if path.exists() else {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT, f"{SETTINGS_FILE} cannot be read ({exc}); fix it first, nothing was changed"
        ) from None
    if not isinstance(values, dict):
        raise NiniError(ErrorCode.INVALID_ARGUMENT, f"{SETTINGS_FILE} is not a JSON object; fix it first")
    node = values
    *parents, last = key.split(".")
    for part in parents:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[last] = change(node.get(last))
    atomic_write_text(path, json.dumps(values, ensure_ascii=False, indent=2) + "\n")
    return path


def _read_file(path: Path, warnings: list[str]) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        warnings.append(f"{path}: cannot be read ({exc.strerror}); using defaults")
        return {}
    try:
        values = json.loads(raw.decode("utf-8-sig"))  # Windows editors (Notepad) save a BOM
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        warnings.append(f"{path}: not valid JSON ({exc}); using defaults, the file is left as it is")
        return {}
    if not isinstance(values, dict):
        warnings.append(f"{path}: must hold a JSON object, found {type(values).__name__}; using defaults")
        return {}
    return values


def _read_env(warnings: list[str]) -> dict[str, Any]:
    """Each field's ``NINI_*`` value, parsed by pydantic-settings; a bad one is skipped alone."""
    source = EnvSettingsSource(Settings)
    values: dict[str, Any] = {}
    for name, field in Settings.model_fields.items():
        try:
            raw, _key, is_complex = source.get_field_value(field, name)
            value = source.prepare_field_value(name, field, raw, is_complex)
        except ValueError as exc:  # SettingsError is a ValueError
            warnings.append(f"environment: NINI_{name.upper()} ignored ({exc}); using the default")
            continue
        if value is not None and value != {}:
            values[name] = value
    return values


def _validate_with_fallback(layers: dict[str, dict[str, Any]], home: Path, warnings: list[str]) -> Settings:
    """Validate the merged layers; drop each invalid value from the layer it came from and retry.

    Only the highest layer holding the value loses it, so a bad ``NINI_*`` value does not also
    discard a good one from settings.json: the field falls back layer by layer to its default.
    """
    from nini.errors import validation_message

    for _ in range(100):  # each round drops at least one value, and there are few fields
        merged: dict[str, Any] = {}
        for layer in layers.values():
            merged = _deep_merge(merged, layer)
        try:
            return Settings(home=home, **merged)
        except ValidationError as exc:
            seen: set[tuple[str, ...]] = set()
            for error in exc.errors():
                loc = [part for part in error["loc"] if isinstance(part, str)]
                if tuple(loc) in seen:  # a bad list gives one error per item: one warning is enough
                    continue
                seen.add(tuple(loc))
                origin = next((name for name, layer in reversed(layers.items()) if _drop(layer, loc)), None)
                if origin is None and loc == ["home"]:
                    warnings.append(f"NINI_HOME is invalid ({validation_message(error)}); using {default_home()}")
                    home = default_home()
                    continue
                warnings.append(
                    f"setting {'.'.join(loc) or '?'} from {origin or 'input'} is invalid "
                    f"({validation_message(error)}); ignored, so a lower source or the default applies"
                )
    raise AssertionError("settings validation did not converge")  # pragma: no cover


def _drop(values: dict[str, Any], loc: list[str]) -> bool:
    """Remove the value at ``loc`` (or its deepest existing parent field) from ``values``."""
    node = values
    for depth, key in enumerate(loc):
        if not isinstance(node, dict) or key not in node:
            return False
        if depth == len(loc) - 1 or not isinstance(node[key], dict):
            del node[key]
            return True
        node = node[key]
    return False


def _deep_merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged
