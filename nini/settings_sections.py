"""The settings sections other than running code's: skills, models, agent, memory, report, UI, MCP, server.

Only the models: ``nini.config`` holds ``Settings`` and its loading (precedence, the fallback of bad
values) and re-exports these, so callers keep naming ``nini.config``. The sections of running agent
code (``execution``, ``r``, ``limits``) are in ``nini.settings_execution``.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from nini.language import Language, words_language

# the server's own secrets, whatever server.secret_env_deny adds: a provider's key variable is never one
SERVER_SECRET_ENV = ("JUPYTER_TOKEN", "JPY_*", "JUPYTERHUB_*", "NINI_DATABASE_URL")


class SkillsSettings(BaseModel):
    """Where skills come from beyond the standard roots."""

    model_config = ConfigDict(extra="ignore")

    extra_dirs: list[Path] = Field(
        default_factory=list,
        description="More folders scanned for SKILL.md (and trusted skill.py), after the user "
        "skills dir and before nini's bundled skills. Relative paths are taken from NINI_HOME.",
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
    context_window: int | None = Field(
        None,
        ge=1000,
        description="The context window of its models in tokens, for the share of it a turn's context uses "
        "(the run footer, nini ask --json); unset: the share of agent.context_max_tokens.",
    )
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
        description="The model's context for a turn: the session's summary and the newest turns that fit; "
        "older turns are folded into the summary (the store keeps them); the newest turn is always sent.",
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
