"""KernelPool with real kernels: state, result/output_df/save_as, figures, rich outputs, errors.

A test that needs a fresh kernel or an empty workspace (what it counts: datasets, artifact numbers,
restarts, the environment it started with) takes a session of its own; the others share the pool's
"shared" session, whose kernel starts once (a kernel start is most of what a test here costs).
"""

from __future__ import annotations

import asyncio
import json
import time
import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from nini.execution.outcome import CONTRACT_KEYS, CodeRequest
from tests.timeouts import timeout

from .conftest import Kernels, assert_cancel_interrupts, new_session

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_state_persists_across_calls(kernels: Kernels) -> None:
    assert kernels.run("import math\nx = 41").success
    out = kernels.run("print(x + 1, math.pi > 3)")
    assert out.success, out.error
    assert out.stdout == "42 True\n"
    assert set(out.contract()) == set(CONTRACT_KEYS)


def test_result_and_preview(kernels: Kernels) -> None:
    code = (
        "import numpy as np, pandas as pd\n"
        "output_df = pd.DataFrame({'n': range(30), 'x': [np.nan] + [1.5] * 29,\n"
        "                          't': pd.date_range('2024-01-01', periods=30)})\n"
        "result = {'total': np.int64(7), 'mean': float('nan'), 'items': [1, 'a']}\n"
    )
    out = kernels.run(code)
    assert out.success, out.error
    assert out.result == {"total": 7, "mean": None, "items": [1, "a"]}
    assert out.has_dataframe
    preview = out.dataframe_preview
    assert preview["columns"] == ["n", "x", "t"]
    assert preview["dtypes"][:2] == ["int64", "float64"] and preview["dtypes"][2].startswith("datetime64")
    assert preview["shape"] == [30, 3]
    assert len(preview["rows"]) == 20
    assert preview["rows"][0] == [0, None, "2024-01-01T00:00:00"]
    json.dumps(out.contract(), allow_nan=False)  # the whole contract is strict JSON


def test_result_and_output_df_are_cleared_after_each_run(kernels: Kernels) -> None:
    # the shared session, where earlier tests set result and output_df too: each run clears them
    kernels.run("import pandas as pd\nresult = 1\noutput_df = pd.DataFrame({'a': [1]})")
    out = kernels.run("print('result' in dir(), 'output_df' in dir())")
    assert out.stdout == "False False\n"
    assert out.result is None and not out.has_dataframe
    kernels.run("result = 5\n1/0")  # cleared after a failure too
    assert kernels.run("print('result' in dir())").stdout == "False\n"


def test_result_that_is_not_json_is_returned_as_repr_with_a_warning(kernels: Kernels) -> None:
    out = kernels.run("class Thing:\n    def __repr__(self):\n        return 'Thing()'\nresult = Thing()")
    assert out.success
    assert out.result == "Thing()"
    assert "result is not JSON-serialisable" in out.stderr


def test_save_as_round_trip(kernels: Kernels) -> None:
    session = new_session()
    out = kernels.run(
        "import pandas as pd\noutput_df = pd.DataFrame({'city': ['a', 'b'], 'n': [1, 2]})", session, save_as="cities"
    )
    assert out.success, out.error
    assert out.datasets_saved == ["cities"]
    path = kernels.workspace(session).dataset_path("cities")
    assert pd.read_parquet(path)["n"].tolist() == [1, 2]
    loaded = kernels.run("result = df['n'].sum()", session, dataset_name="cities")
    assert loaded.result == 3
    by_name = kernels.run("result = [sorted(datasets), datasets['cities'].shape[0]]", session)
    assert by_name.result == [["cities"], 2]


def test_datasets_is_always_current(kernels: Kernels) -> None:
    session = new_session()
    kernels.run("print(len(datasets))", session)  # installs the mapping
    pd.DataFrame({"v": [9]}).to_parquet(kernels.workspace(session).dataset_path("late"))
    assert kernels.run("result = int(datasets['late']['v'][0])", session).result == 9


def test_unknown_dataset_is_refused_before_the_code_runs(kernels: Kernels) -> None:
    session = new_session()
    kernels.run("import pandas as pd\noutput_df = pd.DataFrame({'a': [1]})", session, save_as="known")
    out = kernels.run("ran = True", session, dataset_name="missing")
    assert not out.success
    assert out.error["code"] == "NOT_FOUND"
    assert "'missing'" in out.error["message"] and "known" in out.error["message"]
    assert kernels.run("print('ran' in dir())", session).stdout == "False\n"


def test_save_as_without_a_dataframe_fails(kernels: Kernels) -> None:
    out = kernels.run("output_df = [1, 2]", save_as="nothing")
    assert not out.success
    assert out.error["code"] == "CODE_ERROR"
    assert "DataFrame" in out.error["message"]


def test_figures_become_png_and_svg_named_after_the_label(kernels: Kernels) -> None:
    session = new_session()
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.figure()\nplt.bar(['a'], [1])\nplt.show()"
    out = kernels.run(code, session, label="Sales by Month")
    assert out.success, out.error
    assert out.stderr == ""  # plt.show() under Agg says nothing
    names = [a["name"] for a in out.artifacts]
    assert names == ["sales-by-month.png", "sales-by-month.svg", "sales-by-month-2.png", "sales-by-month-2.svg"]
    assert {a["kind"] for a in out.artifacts} == {"chart"}
    root = kernels.workspace(session).root
    for artifact in out.artifacts:
        assert artifact["path"] == f"artifacts/{artifact['name']}"
        data = (root / artifact["path"]).read_bytes()
        if artifact["format"] == "png":
            assert data.startswith(PNG_MAGIC)
        else:
            assert ET.fromstring(data).tag.endswith("svg")
    # figures are closed after the run, and a second run with the same label does not overwrite
    again = kernels.run(
        "import matplotlib.pyplot as plt\nprint(len(plt.get_fignums()))\n_ = plt.plot([1])",
        session,
        label="Sales by Month",
    )
    assert again.stdout == "0\n"
    assert [a["name"] for a in again.artifacts] == ["sales-by-month-3.png", "sales-by-month-3.svg"]
    # the exported notebook shows the chart
    assert any(o["output_type"] == "display_data" and "image/png" in o["data"] for o in again.outputs)


def test_figures_without_label_are_counted(kernels: Kernels) -> None:
    session = new_session()
    first = kernels.run("import matplotlib.pyplot as plt\nplt.plot([1])", session)
    second = kernels.run("plt.plot([2])", session)
    assert [a["name"] for a in first.artifacts + second.artifacts] == [
        "figure-1.png",
        "figure-1.svg",
        "figure-2.png",
        "figure-2.svg",
    ]


def test_figures_made_before_an_error_are_kept(kernels: Kernels) -> None:
    out = kernels.run("import matplotlib.pyplot as plt\nplt.plot([1])\nraise ValueError('late')", label="partial")
    assert not out.success
    assert [a["name"] for a in out.artifacts] == ["partial.png", "partial.svg"]


def test_rich_outputs_become_artifacts(kernels: Kernels) -> None:
    session = new_session()
    code = (
        "import base64, io\n"
        "import matplotlib.pyplot as plt\n"
        "from IPython.display import HTML, Image, display\n"
        "fig = plt.figure(); plt.plot([1, 2]); buf = io.BytesIO(); fig.savefig(buf, format='png'); plt.close(fig)\n"
        "display(HTML('<b>bold</b>'))\n"
        "display(Image(data=buf.getvalue()))\n"
    )
    out = kernels.run(code, session, label="rich")
    assert out.success, out.error
    by_format = {a["format"]: a for a in out.artifacts}
    assert by_format["html"]["kind"] == "file" and by_format["png"]["kind"] == "chart"
    root = kernels.workspace(session).root
    assert (root / by_format["html"]["path"]).read_text() == "<b>bold</b>"
    assert (root / by_format["png"]["path"]).read_bytes().startswith(PNG_MAGIC)
    assert [o["output_type"] for o in out.outputs] == ["display_data", "display_data"]
    assert "<IPython" not in out.stdout  # the placeholder text of a rich output is not stdout


def test_values_and_tables_show_as_text(kernels: Kernels) -> None:
    out = kernels.run("import pandas as pd\nprint('printed')\npd.DataFrame({'col': [5]})")
    assert out.success
    assert out.stdout.startswith("printed\n") and "col" in out.stdout
    assert out.artifacts == []  # a DataFrame's HTML twin of its text is not an artifact
    kinds = [o["output_type"] for o in out.outputs]
    assert kinds == ["stream", "execute_result"]
    assert out.outputs[1]["data"]["text/html"].startswith("<div>")


@pytest.mark.parametrize(
    ("code", "ename", "line"),
    [
        ("a = 1\nb = 0\nc = a / b\nd = 2", "ZeroDivisionError", 3),
        ("def f():\n    return missing\n\nf()", "NameError", 2),
        ("x = 1\ny = (\nz = 3", "SyntaxError", 2),
        ("if True:\nprint(1)", "IndentationError", 2),
    ],
)
def test_errors_name_the_user_line(kernels: Kernels, code: str, ename: str, line: int) -> None:
    out = kernels.run(code)
    assert not out.success
    error = out.error
    assert error["code"] == "CODE_ERROR"
    assert error["ename"] == ename
    assert error["message"].startswith(f"{ename}: ")
    assert ".py, line" not in error["message"]
    assert error["line"] == line
    assert out.contract()["error"] == {"code": "CODE_ERROR", "message": error["message"], "line": line}
    assert error["traceback"] and all("\x1b" not in t for t in error["traceback"])


def test_error_line_skips_frames_of_earlier_cells(kernels: Kernels) -> None:
    kernels.run("def boom():\n    raise RuntimeError('x')")
    out = kernels.run("y = 1\n\nboom()")
    assert out.error["line"] == 3


def test_ansi_escapes_are_stripped(kernels: Kernels) -> None:
    out = kernels.run("import sys\nprint('\\x1b[31mred\\x1b[0m')\nprint('\\x1b[1mwarn\\x1b[0m', file=sys.stderr)\n1/0")
    assert "red\n" in out.stdout and "\x1b" not in out.stdout
    assert "warn" in out.stderr and "\x1b" not in out.stderr
    assert all("\x1b" not in json.dumps(o) for o in out.outputs)


def test_stdout_keeps_everything(kernels: Kernels) -> None:
    out = kernels.run("for i in range(20000):\n    print(i)")
    assert out.stdout.count("\n") == 20000
    assert out.outputs == [{"output_type": "stream", "name": "stdout", "text": out.stdout}]


def test_two_sessions_run_concurrently_without_mixing(kernels: Kernels) -> None:
    one, two = new_session(), new_session()
    kernels.run("who = 'one'", one)
    kernels.run("who = 'two'", two)

    # each run says it is here, then waits for the test's go: run one after the other, the second would
    # never be here while the first waits, and the test would fail waiting for it
    rendezvous = (
        "import os, time\nopen('here', 'w').close()\n"
        "while not os.path.exists('go'):\n    time.sleep(0.02)\nresult = who"
    )

    async def both() -> list:
        runs = [
            asyncio.ensure_future(kernels.pool.run(s, kernels.workspace(s), CodeRequest(rendezvous)))
            for s in (one, two)
        ]
        deadline = time.monotonic() + timeout(60)
        while not all((kernels.workspace(s).root / "here").exists() for s in (one, two)):  # a poll of the files
            assert time.monotonic() < deadline and not any(r.done() for r in runs), "the runs were not both under way"
            await asyncio.sleep(0.05)
        for s in (one, two):
            (kernels.workspace(s).root / "go").touch()
        return await asyncio.gather(*runs)

    first, second = kernels.wait(both())
    assert (first.result, second.result) == ("one", "two")


def test_runs_of_one_session_are_serialised(kernels: Kernels) -> None:
    session = new_session()
    kernels.run("log = []", session)

    async def three() -> list:
        requests = [CodeRequest(f"import time\nlog.append({i})\ntime.sleep(0.2)\nlog.append({i})") for i in range(3)]
        return await asyncio.gather(*(kernels.pool.run(session, kernels.workspace(session), r) for r in requests))

    assert all(o.success for o in kernels.wait(three()))
    assert kernels.run("result = log", session).result == [0, 0, 1, 1, 2, 2]


def test_kernel_info_and_restart(kernels: Kernels) -> None:
    session = new_session()
    assert kernels.pool.kernel_info(session) is None
    kernels.run("kept = 1", session)
    info = kernels.pool.kernel_info(session)
    assert info["sandbox"] == kernels.pool.sandbox_mode and info["restarts"] == 0 and info["pid"]
    kernels.wait(kernels.pool.restart(session))
    assert kernels.pool.kernel_info(session)["restarts"] == 1
    assert kernels.run("print('kept' in dir(), len(datasets))", session).stdout == "False 0\n"
    kernels.wait(kernels.pool.shutdown_session(session))
    assert kernels.pool.kernel_info(session) is None
    assert kernels.run("print('back')", session).stdout == "back\n"


def test_kernel_works_in_the_workspace_with_a_private_home(kernels: Kernels) -> None:
    out = kernels.run("import os, matplotlib\nresult = [os.getcwd(), os.environ['HOME'], matplotlib.get_backend()]")
    cwd, home, backend = out.result
    assert cwd == str(kernels.workspace("shared").root)
    assert home.startswith("/tmp/") or "nini-kernel-" in home
    assert backend.lower() == "agg"


def test_kernel_does_not_inherit_secrets(kernels: Kernels, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    out = kernels.run(
        "import os\nresult = [k for k in os.environ if 'KEY' in k or k.startswith('NINI_')]", new_session()
    )
    assert out.result == []


def test_cancelling_a_run_interrupts_the_sessions_kernel(kernels: Kernels) -> None:
    session = new_session()
    kernels.run("before = 'kept'", session)
    assert_cancel_interrupts(kernels, session, None)
