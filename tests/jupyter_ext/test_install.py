"""The extension as installed: its entry point, enabled by pip install, configurable traits."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_ext import _jupyter_server_extension_points
from jupyter_ext.app import NiniExtensionApp
from tests.conftest import REPO_ROOT
from tests.jupyter_ext.conftest import jupyter, nini_env
from tests.timeouts import timeout

INSTALLED_CONFIG = Path(sys.prefix) / "etc" / "jupyter" / "jupyter_server_config.d" / "jupyter_ext.json"


def test_extension_point_is_the_nini_app() -> None:
    (point,) = _jupyter_server_extension_points()
    assert point["module"] == "jupyter_ext" and point["app"] is NiniExtensionApp
    assert NiniExtensionApp.name == "nini"


def test_pip_install_put_the_enabling_config_in_place() -> None:
    assert INSTALLED_CONFIG.is_file(), f"{INSTALLED_CONFIG} missing: reinstall with pip install -e ."
    assert '"jupyter_ext": true' in INSTALLED_CONFIG.read_text()


def test_listed_enabled_by_the_venvs_jupyter(tmp_path: Path, nini_home: Path) -> None:
    listed = jupyter("server", "extension", "list", env=nini_env(nini_home, tmp_path))
    text = _plain(listed.stdout + listed.stderr)
    assert f"Config dir: {Path(sys.prefix) / 'etc' / 'jupyter'}" in text
    assert "jupyter_ext enabled" in text and "jupyter_ext 0.1.0 OK" in text, text


@pytest.mark.slow
def test_disable_turns_the_installed_extension_off(tmp_path: Path) -> None:
    """``jupyter server extension disable jupyter_ext`` (sys-prefix by default) in a throwaway prefix
    holding the file as pip installs it: the extension is listed disabled, then enabled again."""
    prefix = tmp_path / "prefix"
    venv.EnvBuilder(with_pip=False).create(prefix)
    (site_packages,) = (prefix / "lib").glob("python3*/site-packages")
    (site_packages / "nini_test.pth").write_text(f"{REPO_ROOT}\n{sysconfig.get_paths()['purelib']}\n")
    config_d = prefix / "etc" / "jupyter" / "jupyter_server_config.d"
    config_d.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "jupyter-config" / "jupyter_server_config.d" / "jupyter_ext.json", config_d)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUPYTER_")} | {
        "JUPYTER_CONFIG_DIR": str(tmp_path / "user-config")
    }

    def toggle(*args: str) -> str:
        run = subprocess.run(
            [str(prefix / "bin" / "python"), "-m", "jupyter_server.extension.serverextension", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout(180),  # as conftest's jupyter(): a Jupyter process, over a minute under load
        )
        assert run.returncode == 0, run.stderr
        return _plain(run.stdout + run.stderr)

    # it starts enabled, as installed: the file is the one test_listed_enabled_by_the_venvs_jupyter's
    # `list` reads as enabled (a `list` here too would start one more Jupyter process for the same proof)
    assert json.loads((config_d / "jupyter_ext.json").read_text()) == json.loads(INSTALLED_CONFIG.read_text())
    assert "successfully disabled" in toggle("disable", "jupyter_ext")
    assert "jupyter_ext disabled" in toggle("list")
    assert "successfully enabled" in toggle("enable", "jupyter_ext")
    assert "jupyter_ext enabled" in toggle("list")
    assert sorted(p.name for p in config_d.iterdir()) == ["jupyter_ext.json"]  # one file, toggled in place


def _plain(text: str) -> str:
    """Without ANSI colours."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.parametrize(
    "jp_server_config",
    [
        Config(
            {
                "ServerApp": {"jpserver_extensions": {"jupyter_ext": True}},
                "NiniExtensionApp": {"sandbox": "none", "r_enabled": False},
            }
        )
    ],
)
def test_traits_override_settings(jp_serverapp: Any, nini_home: Path) -> None:
    settings = jp_serverapp.web_app.settings["nini_runtime"].settings
    assert settings.execution.sandbox == "none" and settings.r_enabled is False
    assert settings.home == nini_home  # from NINI_HOME, since the trait is unset


@pytest.fixture
def settings_json(nini_home: Path) -> None:
    nini_home.mkdir(parents=True, exist_ok=True)
    (nini_home / "settings.json").write_text('{"execution": {"sandbox": "none", "timeout_s": 5}, "r_enabled": false}')


def test_unset_traits_fall_back_to_settings_json(settings_json: None, jp_serverapp: Any, tmp_path: Path) -> None:
    runtime = jp_serverapp.web_app.settings["nini_runtime"]
    assert runtime.settings.execution.sandbox == "none" and runtime.settings.execution.timeout_s == 5
    assert runtime.settings.r_enabled is False
    assert runtime.project_dir == Path(jp_serverapp.root_dir).resolve()
    assert (runtime.settings.logs_dir / "nini.jsonl").parent.is_dir()


def test_nini_home_trait_wins_over_the_environment(
    jp_server_config: Config, tmp_path: Path, jp_configurable_serverapp: Any
) -> None:
    jp_server_config["NiniExtensionApp"]["nini_home"] = str(tmp_path / "elsewhere")
    app = jp_configurable_serverapp(config=jp_server_config)
    assert app.web_app.settings["nini_runtime"].settings.home == tmp_path / "elsewhere"
    assert (tmp_path / "elsewhere" / "nini.db").is_file()
