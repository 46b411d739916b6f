"""Settings: the one place that reads ``NINI_*`` environment variables and ``settings.json``.

Precedence, lowest first: field defaults, ``NINI_HOME/settings.json``, ``NINI_*`` environment
variables (nested fields with ``__``, e.g. ``NINI_SKILLS__EXTRA_DIRS='["/srv/skills"]'``),
explicit arguments. A value that cannot be used never costs more than its own field: a file
that fails to parse, or a field with a bad value, is logged as a warning and that value is
dropped: the field falls back to the source below it (a bad ``NINI_*`` value to settings.json),
finally to its default. The file is never rewritten by loading.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, PrivateAttr, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, EnvSettingsSource, SettingsConfigDict

from nini.settings_execution import ExecutionSettings, LimitsSettings, RSettings
from nini.settings_sections import (
    SERVER_SECRET_ENV,
    AgentSettings,
    ExperienceSettings,
    LLMSettings,
    MCPServerSettings,
    MCPSettings,
    PreferenceSettings,
    ProviderSettings,
    PurposeRoute,
    ReportSettings,
    ServerSettings,
    SkillEnhanceSettings,
    SkillsSettings,
    UISettings,
)

# The settings' public face is this module (docs/settings.md and user code name nini.config): the
# section models, defined in nini.settings_sections and nini.settings_execution, are re-exported here.
__all__ = [
    "SERVER_SECRET_ENV",
    "SETTINGS_FILE",
    "AgentSettings",
    "ExecutionSettings",
    "ExperienceSettings",
    "LLMSettings",
    "LimitsSettings",
    "MCPServerSettings",
    "MCPSettings",
    "PreferenceSettings",
    "ProviderSettings",
    "PurposeRoute",
    "RSettings",
    "ReportSettings",
    "ServerSettings",
    "Settings",
    "SkillEnhanceSettings",
    "SkillsSettings",
    "UISettings",
    "default_home",
    "load_settings",
    "resolve_home",
    "save_setting",
    "update_setting",
]

SETTINGS_FILE = "settings.json"
log = logging.getLogger("nini.config")


def default_home() -> Path:
    return Path("~/.nini").expanduser()


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
