"""A notebook with ``%%nini`` run top to bottom by nbclient (a real kernel) against the scripted model,
then saved and read back: the prompt described the notebook's data within its budget, and the saved
notebook keeps every step as it was last shown (code, stdout, the status line, the new variables)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_notebook

from nini.execution.namespace import HEADER
from nini.tokens import count_tokens
from tests.jupyter_ext.conftest import nini_env
from tests.jupyter_ext.test_magic_ask import configure
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.timeouts import timeout

SETUP = """import numpy as np
import pandas as pd
sales = pd.DataFrame({'region': ['north', 'south'] * 50, 'amount': np.arange(100.0)})
for i in range(200):
    globals()[f'series_{i:03d}'] = pd.Series(np.arange(i))"""
STEP = "by_region = sales.groupby('region').amount.sum()\nprint(by_region.to_string())"


@pytest.mark.slow
def test_a_saved_notebook_keeps_each_step_and_the_prompt_stays_within_its_budget(
    tmp_path: Path, llm_server: ScriptedLLM
) -> None:
    configure(tmp_path / "home", llm_server)
    llm_server.reply(
        tool_call("read_notebook", start=0, end=2), tool_call("run_code", code=STEP), text("North 2450, south 2500.")
    )
    notebook = new_notebook(
        cells=[new_code_cell("%load_ext nini"), new_code_cell(SETUP), new_code_cell("%%nini\nTotal amount by region?")]
    )
    client = NotebookClient(
        notebook, timeout=timeout(180), kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute(env=nini_env(tmp_path / "home", tmp_path))
    nbformat.write(notebook, tmp_path / "saved.ipynb")
    saved = nbformat.read(tmp_path / "saved.ipynb", as_version=4)

    system = llm_server.requests[0]["messages"][0]["content"]
    variables = system[system.index(HEADER) :].split("\n\n## ")[0]
    assert count_tokens(variables) <= 2000 and variables.rstrip().splitlines()[-1].startswith(
        "- … and "
    )  # some left out
    assert "`sales`: DataFrame, 100 rows × 2 columns" in variables and "`amount` float64" in variables
    assert "Total amount by region?" in system and "globals()[f'series_" in system  # the cells run before

    outputs = saved.cells[2].outputs
    html = [o["data"]["text/html"] for o in outputs if "nini-step" in o.get("data", {}).get("text/html", "")]
    plain = "\n".join(o["data"].get("text/plain", "") for o in outputs if "data" in o) + "".join(
        o.get("text", "") for o in outputs
    )
    assert len(html) == 2, plain  # read_notebook and run_code, each one block updated in place
    assert "groupby" in html[1] and "north    2450.0" in html[1]  # its highlighted code and its stdout
    assert "✓ run_code (" in plain and "north    2450.0" in plain
    assert "North 2450, south 2500." in plain
    assert "nini: finished in " in plain and ", 2 steps; new: by_region" in plain
    assert not any(o.get("output_type") == "error" for o in outputs), outputs
