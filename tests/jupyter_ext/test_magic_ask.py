"""``%%nini`` in a real IPython kernel, against the scripted model: the agent's code sees the notebook's data."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import execute_in_kernel, scripted_model_settings, without_approval, write_settings
from tests.jupyter_ext.conftest import nini_env
from tests.jupyter_ext.test_magics import Kernel
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.timeouts import timeout


class AskKernel(Kernel):
    """A kernel whose cell runs also collect displays (the answer is one) and can be interrupted."""

    def ask(
        self, cell: str, *, answers: list[str] | None = None, interrupt_at_first_step: bool = False
    ) -> dict[str, Any]:
        """The cell's outputs; with ``interrupt_at_first_step``, the kernel is interrupted a second
        after the first step shows (its code is running by then), as a user stopping the cell would."""
        out: dict[str, Any] = {
            "stdout": "",
            "stderr": "",
            "errors": [],
            "markdown": [],
            "images": 0,
            "steps": {},
            "plain": [],
            "html": [],
            "prompts": [],
        }

        def collect(message: dict[str, Any]) -> None:
            kind, content = message["msg_type"], message["content"]
            if kind == "stream":
                out[content["name"]] += content["text"]
            elif kind == "error":
                out["errors"].append(f"{content['ename']}: {content['evalue']}")
            elif kind in ("display_data", "update_display_data", "execute_result"):
                data = content["data"]
                if "image/png" in data:
                    out["images"] += 1
                elif "nini-step" in data.get("text/html", ""):  # a step's block, shown then updated in place
                    display_id = content.get("transient", {}).get("display_id")
                    if interrupt_at_first_step and not out["steps"]:
                        threading.Timer(1.0, self.manager.interrupt_kernel).start()
                    out["steps"][display_id] = {"text": data["text/plain"], "html": data["text/html"]}
                elif "nini-answer" in data.get(
                    "text/html", ""
                ):  # the answer: sanitized HTML, its Markdown as plain text
                    out["markdown"].append(data["text/plain"])
                else:  # a plain-text line shown in place (the model's thinking time), a step's code to approve
                    out["plain"].append(data.get("text/plain", ""))
                    out["html"].append(data.get("text/html", ""))

        execute_in_kernel(self.manager, self.client, cell, collect, answers=answers, prompts=out["prompts"])
        out["steps"] = list(out["steps"].values())  # each step as it was last shown, in order
        return out


def configure(home: Path, llm: ScriptedLLM | None) -> None:
    """A scripted model; steps run without asking (what these tests are about is not approval)."""
    write_settings(home, without_approval(scripted_model_settings(llm)))


@pytest.fixture(scope="module")
def shared_llm() -> Iterator[ScriptedLLM]:
    """One scripted model for the module: the kernels shared by several tests are configured with its address."""
    with ScriptedLLM() as server:
        yield server


@pytest.fixture
def llm_server(shared_llm: ScriptedLLM) -> ScriptedLLM:
    """The module's scripted model, fresh for each test (no request seen, no reply queued)."""
    shared_llm.reset()
    return shared_llm


def start_kernel(home: Path, cwd: Path) -> AskKernel:
    started = AskKernel(home, cwd)
    assert started.run("%load_ext nini").errors == []
    return started


@pytest.fixture
def kernel(tmp_path: Path, llm_server: ScriptedLLM) -> Iterator[AskKernel]:
    """A notebook's kernel of its own with nini loaded, steps unasked (test_magic_steps, _answer and
    _remember use it: their tests look at the default session's calls)."""
    configure(tmp_path / "home", llm_server)
    started = start_kernel(tmp_path / "home", tmp_path)
    yield started
    started.shutdown()


@pytest.fixture(scope="module")
def unasked_kernel(tmp_path_factory: pytest.TempPathFactory, shared_llm: ScriptedLLM) -> Iterator[AskKernel]:
    """:func:`kernel`, shared by this module's tests that use it (each asks in a session of its own
    or looks only at what its own cell did)."""
    root = tmp_path_factory.mktemp("ask")
    configure(root / "home", shared_llm)
    started = start_kernel(root / "home", root)
    yield started
    started.shutdown()


@pytest.mark.slow
def test_the_agents_code_uses_the_notebooks_dataframe(unasked_kernel: AskKernel, llm_server: ScriptedLLM) -> None:
    setup = unasked_kernel.run(
        "import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's', 'n'], 'amount': [1.0, 2.0, 4.0]})"
    )
    assert setup.errors == []
    code = (
        "by_region = sales.groupby('region')['amount'].sum().to_dict()\nprint(len(sales))\nresult = by_region\n"
        "import matplotlib.pyplot as plt\n_ = plt.bar(list(by_region), list(by_region.values()))"
    )
    llm_server.reply(tool_call("run_code", code=code, label="by region"), text("North sold **5.0**, south **2.0**."))
    out = unasked_kernel.ask("%%nini\nHow much did each region sell?")
    assert out["errors"] == [] and out["stderr"] == "", out
    assert out["stdout"].startswith("nini: the agent's code runs in your kernel, not sandboxed")
    [step] = out["steps"]
    assert step["text"].startswith("✓ run_code [by region] (") and "    by_region = sales.groupby" in step["text"]
    assert "  stdout:\n    3" in step["text"]  # the code's own print, inside its step
    assert "<details class='nini-step'>" in step["html"] and step["html"].count("<img src='data:image/png") == 1
    assert "3" not in out["stdout"].splitlines()  # not loose in the cell
    assert out["markdown"][-1] == "North sold **5.0**, south **2.0**."
    assert re.search(r"\nnini: finished in [0-9.]+ s, 1 step; new: by_region\n$", out["stdout"]), out["stdout"]
    tool_message = [m for m in llm_server.requests[1]["messages"] if m["role"] == "tool"][0]
    payload = json.loads(tool_message["content"])
    assert payload["result"] == {"n": 5.0, "s": 2.0} and payload["stdout"] == "3\n"
    # the agent's variables are the notebook's now, and the run is recorded in its session
    assert unasked_kernel.run("print(by_region)").stdout == "{'n': 5.0, 's': 2.0}\n"
    session_id = unasked_kernel.run("%nini session").stdout.strip()
    store = unasked_kernel.store()
    try:
        assert [(c["tool_name"], c["status"]) for c in store.list_tool_calls(session_id)] == [("run_code", "succeeded")]
        assert [m["role"] for m in store.list_messages(session_id)][:1] == ["user"]
    finally:
        store.close()


@pytest.mark.slow
def test_failed_code_is_reported_and_the_model_answers(unasked_kernel: AskKernel, llm_server: ScriptedLLM) -> None:
    llm_server.reply(tool_call("run_code", code="x = 1\ny = no_such_name"), text("That name does not exist."))
    out = unasked_kernel.ask("%%nini --session asked-here\nUse no_such_name")
    assert out["errors"] == [], out
    assert out["steps"][0]["text"].startswith("✗ run_code: CODE_ERROR: NameError")
    assert "<details class='nini-step' open>" in out["steps"][0]["html"]  # a failure shows unfolded
    assert out["markdown"][-1] == "That name does not exist."
    tool_message = [m for m in llm_server.requests[1]["messages"] if m["role"] == "tool"][0]
    assert json.loads(tool_message["content"])["error"]["line"] == 2
    store = unasked_kernel.store()
    try:
        assert [c["status"] for c in store.list_tool_calls("asked-here")] == ["failed"]
    finally:
        store.close()


@pytest.mark.slow
def test_interrupting_the_cell_cancels_the_run(unasked_kernel: AskKernel, llm_server: ScriptedLLM) -> None:
    # an hour's sleep and answer: a cell that waited for either would end in execute_in_kernel's timeout
    llm_server.reply(
        tool_call("run_code", code="import time\ntime.sleep(3600)", timeout_s=7200), text("never", delay_s=3600)
    )
    out = unasked_kernel.ask("%%nini --session stopped\nTake your time", interrupt_at_first_step=True)
    assert out["errors"] == [], out
    assert "cancelling" in out["stderr"] and "cancelled" in out["stderr"]
    assert "never" not in out["markdown"]
    assert unasked_kernel.run("print('alive')").stdout == "alive\n"
    store = unasked_kernel.store()
    try:
        done = [e for e in store.list_events("stopped", 0) if e["type"] == "done"]
        assert [d["data"]["ended_by"] for d in done] == ["canceled"]
        calls = store.list_tool_calls("stopped")
        assert [(c["status"], c["error_code"]) for c in calls] == [("failed", "CANCELED")], calls
    finally:
        store.close()


@pytest.mark.slow
def test_without_a_model_it_says_so_in_one_line(tmp_path: Path) -> None:
    configure(tmp_path / "home", None)
    kernel = AskKernel(tmp_path / "home", tmp_path)
    try:
        kernel.run("%load_ext nini")
        out = kernel.ask("%%nini\nanything?")
        assert out["errors"] == [] and "Traceback" not in out["stderr"]
        assert out["stderr"].startswith("nini: NO_MODEL_AVAILABLE: ") and out["stderr"].count("\n") == 1
        empty = kernel.ask("%%nini\n")
        assert any("UsageError" in e for e in empty["errors"]) or "UsageError" in empty["stderr"]
    finally:
        kernel.shutdown()


@pytest.fixture(scope="module")
def default_kernel(tmp_path_factory: pytest.TempPathFactory, shared_llm: ScriptedLLM) -> Iterator[AskKernel]:
    """A notebook's kernel with nini loaded under the default settings (nothing about approval,
    which is on), in English; its NINI_HOME is ``.home``. Shared by the tests that use it: they ask
    in its one session, each ending with the session's steps asked again (the approval test resets
    its "allow for this session" before it ends)."""
    root = tmp_path_factory.mktemp("ask-default")
    write_settings(root / "home", {**scripted_model_settings(shared_llm), "ui": {"language": "en"}})
    started = start_kernel(root / "home", root)
    yield started
    started.shutdown()


@pytest.mark.slow
def test_by_default_each_step_shows_its_code_and_runs_only_once_the_user_allows_it(
    default_kernel: AskKernel, llm_server: ScriptedLLM
) -> None:
    """Approval is on by default: each step shows its whole code (highlighted) and asks; "once" runs
    it, "s" runs it and every later step of the session without asking, anything else rejects."""
    llm_server.reply(
        tool_call("run_code", code="approved_step = 1"), tool_call("run_code", code="refused_step = 1"), text("Done.")
    )
    out = default_kernel.ask("%%nini\nSet two flags.", answers=["o", "n"])
    assert out["errors"] == [], out
    assert out["stdout"].count("nini wants to run this step; it runs in your kernel, not sandboxed:") == 2
    assert out["prompts"] == ["Allow once [o] · Allow for this session [s] · Reject [N]: "] * 2
    shown = "".join(html for html in out["html"] if "approved_step" in html)
    assert "approved_step" in shown and "refused_step" in "".join(out["html"])  # the code, highlighted
    assert any(step["text"].startswith("✗ run_code: CANCELED") for step in out["steps"])
    flags = default_kernel.run("print('approved_step' in dir(), 'refused_step' in dir())").stdout
    assert flags == "True False\n", out["steps"]
    llm_server.reply(
        tool_call("run_code", code="first = 1"),
        tool_call("run_code", code="second = 2"),
        text("Done."),
        tool_call("run_code", code="third = 3"),
        text("Done."),
    )
    allowed = default_kernel.ask("%%nini\nTwo more.", answers=["s"])
    assert len(allowed["prompts"]) == 1  # the second step ran without asking
    assert "this session's steps now run in your kernel without asking" in allowed["stdout"]
    later = default_kernel.ask("%%nini\nOne more.", answers=[])
    assert "allowed for this session" in later["stdout"] and later["prompts"] == []
    assert default_kernel.run("print(first + second + third)").stdout == "6\n"
    assert "ask again" in default_kernel.run("%nini approvals --reset").stdout
    llm_server.reply(tool_call("run_code", code="fourth = 4"), text("Done."))
    asked = default_kernel.ask("%%nini\nAnd again.", answers=[""])
    assert len(asked["prompts"]) == 1  # asks again; an empty answer rejects
    assert default_kernel.run("print('fourth' in dir())").stdout == "False\n"


@pytest.mark.slow
def test_a_module_a_sandboxed_step_planted_is_not_what_a_later_step_imports_here(
    default_kernel: AskKernel, llm_server: ScriptedLLM, tmp_path: Path
) -> None:
    """The attack of issue 31: a sandboxed step of the session writes a module named like a library
    into the workspace; a later %%nini step of the same session imports that name in the user's
    kernel. Under the default settings the step asks first, and allowed, it does not find the
    planted file (the kernel's working directory and sys.path are the notebook's)."""
    home, marker = default_kernel.home, tmp_path / "planted-ran"
    planted = f"open('nini_planted_lib.py', 'w').write(\"open({str(marker)!r}, 'w').write('ran')\")"
    assert default_kernel.run(f"%%nini_run\n{planted}").errors == []  # in the session's sandbox
    assert (home / "sessions").is_dir() and next(home.glob("sessions/*/workspace/nini_planted_lib.py"))
    llm_server.reply(tool_call("run_code", code="import nini_planted_lib"), text("Imported."))
    out = default_kernel.ask("%%nini\nImport it.", answers=["o"])
    assert len(out["prompts"]) == 1  # a person was asked
    assert any("ModuleNotFoundError" in step["text"] for step in out["steps"]), out["steps"]
    assert not marker.exists()


@pytest.mark.slow
def test_a_link_a_sandboxed_step_planted_is_not_followed_when_a_later_step_draws_here(
    default_kernel: AskKernel, llm_server: ScriptedLLM, tmp_path: Path
) -> None:
    """A sandboxed step replaces the workspace's artifacts/ with a link to a host folder; a later
    %%nini step (allowed by a person, default settings) draws a chart in the user's kernel: nini's
    kernel side saves nothing through the link."""
    home, outside = default_kernel.home, tmp_path / "outside"
    outside.mkdir()
    plant = (
        "import pathlib\npathlib.Path('artifacts').rename('artifacts-was')\n"
        f"pathlib.Path('artifacts').symlink_to({str(outside)!r})"
    )
    assert default_kernel.run(f"%%nini_run\n{plant}").errors == []  # in the session's sandbox
    assert next(home.glob("sessions/*/workspace/artifacts")).is_symlink()
    llm_server.reply(
        tool_call("run_code", code="import matplotlib.pyplot as plt\nplt.plot([1, 2])", label="chart"), text("Drawn.")
    )
    out = default_kernel.ask("%%nini\nDraw it.", answers=["o"])
    assert len(out["prompts"]) == 1 and out["errors"] == []
    assert any("charts were not saved" in step["text"] for step in out["steps"]), out["steps"]
    assert list(outside.iterdir()) == []


@pytest.mark.slow
def test_a_qualifying_run_becomes_a_skill_that_nini_skills_list_shows(tmp_path: Path, llm_server: ScriptedLLM) -> None:
    """End to end in a notebook kernel: an error recovered and three code runs score 3, the
    conservative threshold; the enhancement saves a skill after the answer, and its note follows."""
    home = tmp_path / "home"
    write_settings(
        home, without_approval({**scripted_model_settings(llm_server), "skill_enhance": {"auto_enhance": True}})
    )
    asker = AskKernel(home, tmp_path)
    try:
        assert asker.run("%load_ext nini").errors == []
        assert (
            asker.run("import pandas as pd\nsales = pd.DataFrame({'m': [1, 2, 3], 'v': [5.0, 7.0, 9.0]})").errors == []
        )
        skill = (
            "---\nname: monthly-slope\ndescription: Fit the monthly slope of a value column.\n---\n\n"
            "# Monthly slope\n\nUse numpy.polyfit on month and value; check the column names first.\n"
        )
        llm_server.reply(
            tool_call("run_code", code="slope = sales['value'].diff().mean()"),  # wrong column: fails
            tool_call("run_code", code="print(list(sales.columns))"),
            tool_call("run_code", code="import numpy as np\nslope = float(np.polyfit(sales['m'], sales['v'], 1)[0])"),
            text("The value grows by **2.0** a month."),
            tool_call("save_skill", name="monthly-slope", content=skill),
            text("[Skill] Created: monthly-slope"),
        )
        out = asker.ask("%%nini\nHow fast does v grow per month?")
        assert out["errors"] == [], out
        assert out["markdown"][-1] == "The value grows by **2.0** a month."  # the answer as the model gave it
        assert out["stdout"].rstrip().endswith("[Skill] Created: monthly-slope")
        assert asker.run("print(round(slope, 6))").stdout == "2.0\n"
    finally:
        asker.shutdown()
    listed = subprocess.run(
        [str(Path(sys.executable).with_name("nini")), "skills", "list", "--json"],
        check=False,
        cwd=tmp_path,
        env=nini_env(home, tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout(60),
    )
    assert listed.returncode == 0, listed.stderr
    record = {r["name"]: r for r in json.loads(listed.stdout)}["monthly-slope"]
    assert (record["type"], record["description"]) == ("markdown", "Fit the monthly slope of a value column.")
