"""``%%nini`` and the user's notebook, in a real kernel against the scripted model: the prompt
describes the notebook's variables and cells, proposals print as cells to copy, the model's
thinking time shows, and --isolated leaves the notebook's names as they were but for the saved
datasets."""

from __future__ import annotations

import pytest

from tests.jupyter_ext.test_magic_ask import AskKernel, kernel  # noqa: F401 - the fixture
from tests.llm_server import Reply, ScriptedLLM, text, tool_call


@pytest.mark.slow
def test_the_prompt_describes_the_notebooks_variables_and_cells(kernel: AskKernel, llm_server: ScriptedLLM) -> None:  # noqa: F811
    setup = kernel.run("import pandas as pd\nsales = pd.DataFrame({'region': ['n', 's'] * 30, 'amount': range(60)})")
    assert setup.errors == []
    llm_server.reply(tool_call("read_notebook", cell=1), text("Sales has 60 rows."))
    out = kernel.ask("%%nini\nWhat is in sales?")
    assert out["errors"] == [], out
    system = llm_server.requests[0]["messages"][0]["content"]
    assert "`sales`: DataFrame, 60 rows × 2 columns" in system and "`amount` int64 (0, 1, 2)" in system
    assert "import pandas as pd\nsales = pd.DataFrame(" in system  # the cell run before
    assert "What is in sales?" in system.split("active]")[1]  # the running cell is the active one
    assert '"source":"import pandas as pd' in llm_server.requests[1]["messages"][-1]["content"]  # read_notebook


@pytest.mark.slow
def test_a_proposal_prints_as_a_cell_to_copy_and_is_recorded(kernel: AskKernel, llm_server: ScriptedLLM) -> None:  # noqa: F811
    llm_server.reply(tool_call("propose_cell", source="summary(df)", language="r"), text("Paste it below."))
    out = kernel.ask("%%nini\nGive me an R summary cell")
    [step] = out["steps"]
    assert step["text"].startswith("✓ propose_cell (")
    assert "Proposed cell (r); copy it into a new cell:\n    %%nini_r\n    summary(df)" in step["text"]
    assert "<details class='nini-step' open>" in step["html"]
    store, session_id = kernel.store(), kernel.run("%nini session").stdout.strip()
    try:
        [call] = store.list_tool_calls(session_id)
    finally:
        store.close()
    assert (call["tool_name"], call["status"], call["result"]["source"]) == (
        "propose_cell",
        "succeeded",
        "%%nini_r\nsummary(df)",
    )


@pytest.mark.slow
def test_thinking_time_shows_while_the_model_answers(kernel: AskKernel, llm_server: ScriptedLLM) -> None:  # noqa: F811
    llm_server.reply(Reply(content="Done.", delay_s=2.5))
    out = kernel.ask("%%nini\nslow one")
    assert out["errors"] == [] and out["markdown"][-1] == "Done."
    assert any(line.startswith("nini: thinking… ") for line in out["plain"]), out["plain"]


@pytest.mark.slow
def test_isolated_keeps_the_notebooks_names_but_brings_back_the_saved_dataset(
    kernel: AskKernel, llm_server: ScriptedLLM
) -> None:  # noqa: F811
    assert (
        kernel.run("import pandas as pd\nsales = pd.DataFrame({'m': [1, 2], 'v': [3.0, 4.0]})\ntotal = 7").errors == []
    )
    code = "total = 0\nscratch = 1\nsales = None\noutput_df = pd.DataFrame({'m': [1], 'v': [7.0]})"
    llm_server.reply(tool_call("run_code", code=code, save_as="monthly"), text("Saved monthly."))
    out = kernel.ask("%%nini --isolated\nsave monthly")
    assert out["errors"] == [], out
    [step] = out["steps"]  # output_df shows as a table in its step
    assert (
        "<th>m</th><th>v</th>" in step["html"]
        and "<td>7.0</td>" in step["html"]
        and "1 rows × 2 columns" in step["html"]
    )
    assert "  table: 1 rows × 2 columns (m, v)" in step["text"]
    assert "; new: monthly" in out["stdout"] and "changed" not in out["stdout"]
    probe = kernel.run("print(total, 'scratch' in dir(), type(sales).__name__, monthly['v'].tolist())")
    assert probe.stdout == "7 False DataFrame [7.0]\n", probe
