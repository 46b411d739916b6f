"""The static Python policy: each row is (code, expected rule id, expected line in the user's code)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nini.errors import ErrorCode, NiniError
from nini.execution.policy import check_python, find_violations

# Every module the policy names as forbidden (kept here, not imported, so the list is reviewed).
FORBIDDEN_MODULES = """
    os subprocess socket ctypes cffi shutil multiprocessing concurrent importlib imp pickle cPickle
    dill cloudpickle shelve marshal urllib urllib3 requests httpx aiohttp http ftplib smtplib
    telnetlib ssl pty pexpect signal resource builtins code codeop runpy webbrowser asyncio.subprocess
    posix gc pydoc pdb _posixsubprocess
""".split()

VIOLATIONS = [
    # forbidden-import: aliases, from-imports, submodules, relative imports, several per statement
    ("import subprocess as sp\nsp.run(['ls'])", "forbidden-import", 1),
    ("from os import path", "forbidden-import", 1),
    ("from os.path import join", "forbidden-import", 1),
    ("import os.path", "forbidden-import", 1),
    ("import json, os", "forbidden-import", 1),
    ("from asyncio import subprocess", "forbidden-import", 1),
    ("from concurrent.futures import ProcessPoolExecutor", "forbidden-import", 1),
    ("from . import subprocess", "forbidden-import", 1),
    ("from .os import system", "forbidden-import", 1),
    ("from sys import modules", "forbidden-import", 1),
    ("import asyncio\nasyncio.subprocess.PIPE", "forbidden-import", 2),
    ("import pandas as pd\npd.io.common.os.system('id')", "forbidden-import", 2),
    ("from pandas.io.common import os", "forbidden-import", 1),
    ("import numpy as np\nnp.ctypeslib.ctypes.CDLL(None)", "forbidden-import", 2),
    ("import IPython\nIPython.get_ipython().system('id')", "forbidden-import", 2),
    # forbidden-call: bare-name builtins, called or passed around
    ("eval('1 + 1')", "forbidden-call", 1),
    ("exec('x = 1')", "forbidden-call", 1),
    ("compile('x', 'f', 'exec')", "forbidden-call", 1),
    ("__import__('os')", "forbidden-call", 1),
    ("g = globals()", "forbidden-call", 1),
    ("x = 1\nlocals()", "forbidden-call", 2),
    ("vars()", "forbidden-call", 1),
    ("import math\nvars(math)", "forbidden-call", 2),
    ("breakpoint()", "forbidden-call", 1),
    ("name = input('name? ')", "forbidden-call", 1),
    ("exit()", "forbidden-call", 1),
    ("quit", "forbidden-call", 1),
    ("run = exec\nrun('import os')", "forbidden-call", 1),
    ("list(map(eval, ['1', '2']))", "forbidden-call", 1),
    ("get_ipython().run_line_magic('pip', 'install x')", "forbidden-call", 1),
    ("ip = get_ipython", "forbidden-call", 1),
    ("import numpy as np\ngetattr(np, 'load')", "forbidden-call", 2),
    ("import pandas\nsetattr(pandas, 'x', 1)", "forbidden-call", 2),
    ("from scipy import stats\nhasattr(stats, 'ttest_ind')", "forbidden-call", 2),
    ("import asyncio\nasync def f():\n    await asyncio.create_subprocess_shell('id')", "forbidden-call", 3),
    # shadowing is honoured only where the builtin can no longer be reached
    ("eval = eval\neval('1')", "forbidden-call", 1),
    ("if False:\n    eval = print\neval('1')", "forbidden-call", 3),
    ("eval = print\ndel eval\neval('1')", "forbidden-call", 3),
    ("def f(eval):\n    return eval\neval('1')", "forbidden-call", 3),
    ("def f(eval=eval):\n    return eval('1')", "forbidden-call", 1),
    ("def f():\n    global exec\n    exec('x')\nexec = print", "forbidden-call", 3),
    ("def run():\n    return exec('x')\nrun()\nexec = print", "forbidden-call", 2),
    ("def f(x: eval('1')):\n    pass", "forbidden-call", 1),
    # dunder-access: attributes, plain names, string keys, introspection through sys
    ("().__class__.__bases__[0].__subclasses__()", "dunder-access", 1),
    ("f = lambda: 0\nf.__globals__['x']", "dunder-access", 2),
    ("print.__self__.exec('x')", "dunder-access", 1),
    ("def f():\n    pass\nf.__code__", "dunder-access", 3),
    ("x.__getattribute__('a')", "dunder-access", 1),
    ("type(x).__mro__", "dunder-access", 1),
    ("__builtins__", "dunder-access", 1),
    ("print(__loader__)", "dunder-access", 1),
    ("b = {}['__builtins__']", "dunder-access", 1),
    ("getattr(f, '__globals__')", "dunder-access", 1),
    ("import sys\nsys.modules['os']", "dunder-access", 2),
    ("import sys as s\ns._getframe(0)", "dunder-access", 2),
    ("import inspect\ninspect.currentframe().f_back.f_globals", "dunder-access", 2),
    ("try:\n    1 / 0\nexcept Exception as e:\n    e.__traceback__.tb_frame", "dunder-access", 4),
    ("g = (i for i in [])\ng.gi_frame", "dunder-access", 2),
    ("import numpy as np\nnp.__dict__", "dunder-access", 2),
    # path-outside-workspace: literal paths only
    ("open('/etc/passwd')", "path-outside-workspace", 1),
    ("open('../secrets.txt', 'w')", "path-outside-workspace", 1),
    ("open('data/../../x')", "path-outside-workspace", 1),
    ("open('~/.ssh/id_rsa')", "path-outside-workspace", 1),
    ("open(file='/etc/hosts')", "path-outside-workspace", 1),
    ("import io\nio.open('/etc/hosts')", "path-outside-workspace", 2),
    ("from pathlib import Path\nPath('/etc') / 'passwd'", "path-outside-workspace", 2),
    ("import pathlib\npathlib.Path('/root')", "path-outside-workspace", 2),
    ("import pandas as pd\npd.read_csv('/etc/passwd')", "path-outside-workspace", 2),
    ("pd.read_csv(filepath_or_buffer='~/data.csv')", "path-outside-workspace", 1),
    ("pd.read_csv('file:///etc/passwd')", "path-outside-workspace", 1),
    ("pd.read_parquet('/data/x.parquet')", "path-outside-workspace", 1),
    ("df.to_csv('/tmp/out.csv')", "path-outside-workspace", 1),
    ("df.to_parquet(path='/tmp/out.parquet')", "path-outside-workspace", 1),
    ("df.to_excel('../out.xlsx')", "path-outside-workspace", 1),
    ("pd.ExcelWriter('/tmp/x.xlsx')", "path-outside-workspace", 1),
    ("np.load('/tmp/a.npy')", "path-outside-workspace", 1),
    ("np.save('/tmp/a.npy', a)", "path-outside-workspace", 1),
    ("np.loadtxt(fname='/tmp/a.txt')", "path-outside-workspace", 1),
    ("np.savetxt('/tmp/a.txt', a)", "path-outside-workspace", 1),
    ("np.genfromtxt('/tmp/a.txt')", "path-outside-workspace", 1),
    ("np.fromfile('/dev/mem')", "path-outside-workspace", 1),
    ("plt.savefig('/tmp/chart.png')", "path-outside-workspace", 1),
    ("fig.savefig(fname='../chart.png')", "path-outside-workspace", 1),
    ("pq.read_table('/data/t.parquet')", "path-outside-workspace", 1),
    ("pq.write_table(table, '/tmp/t.parquet')", "path-outside-workspace", 1),
    ("pq.write_table(table, where='../t.parquet')", "path-outside-workspace", 1),
    (
        "df.to_csv(\n    'ok.csv',\n)\ndf.to_csv(\n    index=False,\n    path_or_buf='/tmp/x.csv',\n)",
        "path-outside-workspace",
        6,
    ),
    # IPython syntax: shell escapes and magics other than the harmless ones
    ("!ls", "forbidden-call", 1),
    ("x = 1\n!ls -la", "forbidden-call", 2),
    ("files = !ls", "forbidden-call", 1),
    ("%system ls", "forbidden-call", 1),
    ("%sx ls", "forbidden-call", 1),
    ("%pip install requests", "forbidden-call", 1),
    ("%cd /", "forbidden-call", 1),
    ("%run script.py", "forbidden-call", 1),
    ("%%bash\necho hi", "forbidden-call", 1),
    ("%%script bash\necho hi", "forbidden-call", 1),
    ("%%writefile /tmp/x.py\nprint(1)", "forbidden-call", 1),
    ("%%time extra\nx = 1", "forbidden-call", 1),
    ("%matplotlib module://evil", "forbidden-call", 1),
    ("x = 1\nos?", "forbidden-call", 2),
    ("%time eval('1')", "forbidden-call", 1),
    ("x = 1\n%time import os", "forbidden-import", 2),
    ("%timeit -n 10 -r 3 __import__('os')", "forbidden-call", 1),
    ("%timeit -x import os", "uncheckable", 1),  # options we cannot parse: refused, not guessed
    ("%%timeit -n1 import os\nx = 1", "forbidden-import", 1),
    ("%%time\nx = 1\nimport subprocess", "forbidden-import", 3),
    ("%%timeit\nx = 1\n!ls", "forbidden-call", 3),
    ("%%capture out\nimport os", "forbidden-import", 2),
    ("\n%%time\nx = 1\nimport os", "forbidden-import", 4),
    ("if True:\n    !ls", "forbidden-call", 2),
    # line numbers survive escapes that IPython rewrites into fewer lines
    ("!echo a \\\n  b\nimport os", "forbidden-call", 1),
    ("x = (1,\n  2)\n%time y = \\\n  x\nimport os", "forbidden-import", 5),
    # nested and indented code, multiline statements
    ("def f():\n    if True:\n        import os", "forbidden-import", 3),
    ("class C:\n    def m(self):\n        return eval('1')", "forbidden-call", 3),
    ("try:\n    pass\nexcept Exception:\n    import socket", "forbidden-import", 4),
    ("for i in range(3):\n    with open('x') as f:\n        exec(f.read())", "forbidden-call", 3),
    ("async def main():\n    async with s:\n        import httpx", "forbidden-import", 3),
    ("x = [\n    1,\n    2,\n]\ny = (\n    3 +\n    eval('4')\n)", "forbidden-call", 7),
    ("result = compute(\n    a,\n    b=open(\n        '/etc/shadow',\n    ),\n)", "path-outside-workspace", 4),
    ("[eval(s) for s in items]", "forbidden-call", 1),
]

ALLOWED = [
    "import pandas as pd\nimport numpy as np\nimport scipy.stats as st\nimport statsmodels.api as sm",
    "import sklearn\nfrom sklearn.linear_model import LinearRegression\nimport matplotlib.pyplot as "
    "plt\nimport seaborn as sns",
    "import json, math, re, statistics, datetime, collections, itertools, functools, io, tempfile",
    "import warnings, textwrap, random, typing, dataclasses, decimal, fractions, time, string, sys",
    "import threading, glob, pathlib, joblib, inspect, asyncio, logging, csv, copy, operator",
    "from concurrent_log import x",  # only the listed module, not every name that starts with it
    "from __future__ import annotations",
    "from IPython.display import display, Markdown",
    "import sys\nprint(sys.version, sys.platform, sys.version_info >= (3, 11))",
    "df.eval('c = a + b')\ndf.query('a > 1')\nmodel.compile()\nimport re\nre.compile(r'\\d+')",
    "print('import os; eval(x)')\n# import subprocess; eval(x); open('/etc/passwd')\ns = 'os.system'",
    "x = '''\n!ls\n%system ls\n'''",
    "name = 'world'\nprint(f'hello {name!r:>10}')",
    "class Point:\n    x: int = 0\n    def norm(self) -> float:\n        return (self.x ** 2) ** 0.5",
    "square = lambda v: v * v\nsquares = {k: square(k) for k in range(3) if k}\ngen = list(i for i in range(3))",
    "async def fetch(session):\n    async with session as s:\n        async for row in s:\n         "
    "   await row\n    return [x async for x in s]",
    "from typing import Optional\ndef f(a: list[int], b: Optional[dict[str, float]] = None) -> "
    "tuple[int, ...]:\n    return tuple(a)",
    "obj.__class__.__name__\ntype(obj).__name__\nobj.__dict__\nobj.__doc__\nlen.__name__",
    "help(len)\nhasattr(df, 'columns')\ngetattr(df, 'shape')\nsetattr(obj, 'a', 1)",
    # names the cell binds for itself are its own, not the builtins
    "eval = 3\nprint(eval)",
    "def evaluate(x):\n    return x\neval = evaluate\neval('a')",
    "def compile(model):\n    return model\ncompile(net)",
    "def f(eval):\n    return eval(1)",
    "def f(input):\n    def g():\n        return input()\n    return g",
    "def f():\n    vars = {}\n    return vars",
    "lambda exec: exec(1)",
    "input_ = 1\ninputs = [1]\ncompiled = 2\nevaluation = 3",
    # paths inside the workspace
    "import pandas as pd\ndf = pd.read_csv('data.csv')\ndf.to_csv('artifacts/out.csv', index=False)",
    "df.to_parquet('datasets/sales.parquet')\npd.read_parquet(path='datasets/sales.parquet')",
    "open('artifacts/../notes.txt', 'w')\nopen('./a.txt')\nopen('')",
    "from pathlib import Path\nPath('artifacts').mkdir(exist_ok=True)\nPath('artifacts') / 'chart.png'",
    "np.save('arr.npy', a)\nnp.loadtxt('a.txt')\nplt.savefig('artifacts/chart.png', dpi=150)",
    "pd.read_csv('https://example.com/data.csv')",  # a URL, not a path (the sandbox has no network)
    "pd.read_json('{\"a\": [1, 2]}')\npd.read_csv(io.StringIO('a,b\\n1,2'))",
    "ts.to_period('M')\npd.to_datetime('2024/01/01')\ns.to_frame('value')",
    "path = '/etc/passwd'\nopen(path)\nopen(f'/tmp/{name}')",  # not judged statically: the sandbox covers it
    # harmless magics
    "%matplotlib inline\nimport matplotlib.pyplot as plt",
    "%time total = sum(range(10))",
    "%timeit -n 10 -r 3 sorted(xs)",
    "%%time\nimport pandas as pd\nx = pd.Series([1, 2]).sum()",
    "%%timeit -n 5 xs = list(range(100))\nsorted(xs)",
    "%%capture captured\nprint('noisy')",
]

ANALYSIS = """\
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy import stats

df = pd.read_csv("data.csv", parse_dates=["date"])
df = df.dropna(subset=["amount"]).query("amount > 0")
df["month"] = df["date"].dt.to_period("M").astype(str)
monthly = df.groupby(["month", "region"], as_index=False)["amount"].agg(["sum", "mean", "count"])
pivot = monthly.pivot(index="month", columns="region", values="sum").fillna(0)

north = df.loc[df["region"] == "north", "amount"]
south = df.loc[df["region"] == "south", "amount"]
t_stat, p_value = stats.ttest_ind(north, south, equal_var=False)
slope, intercept, r, p, se = stats.linregress(np.arange(len(pivot)), pivot.sum(axis=1))

fig, ax = plt.subplots(figsize=(8, 4))
pivot.plot(ax=ax, marker="o")
ax.set_title(f"Monthly sales (Welch t={t_stat:.2f}, p={p_value:.3f})")
ax.set_xlabel("month")
ax.set_ylabel("amount")
fig.tight_layout()
fig.savefig("artifacts/chart.png", dpi=150)
plt.close(fig)

monthly.to_csv("artifacts/monthly.csv", index=False)
result = {"t": float(t_stat), "p": float(p_value), "trend": float(slope)}
output_df = monthly
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path


@pytest.mark.parametrize("code, rule, line", VIOLATIONS)
def test_violation(code: str, rule: str, line: int, workspace: Path) -> None:
    with pytest.raises(NiniError) as caught:
        check_python(code, workspace)
    error = caught.value
    assert error.code is ErrorCode.POLICY_VIOLATION
    assert (error.details["rule"], error.details["line"]) == (rule, line), error.message
    assert error.message.startswith(f"line {line}: ") and error.message.endswith(f"(rule {rule})")
    assert error.details["name"]


@pytest.mark.parametrize("module", FORBIDDEN_MODULES)
@pytest.mark.parametrize(
    "template", ["import {m}", "import {m} as alias", "from {m} import thing", "x = 1\nif x:\n    import {m}"]
)
def test_every_forbidden_module(module: str, template: str, workspace: Path) -> None:
    code = template.format(m=module)
    found = find_violations(code, workspace)
    assert [(v.rule, v.line) for v in found] == [("forbidden-import", code.count("\n") + 1)]
    assert found[0].name == module


@pytest.mark.parametrize("code", ALLOWED)
def test_allowed(code: str, workspace: Path) -> None:
    assert find_violations(code, workspace) == []
    check_python(code, workspace)


def test_real_analysis_passes(workspace: Path) -> None:
    assert len(ANALYSIS.splitlines()) >= 30
    check_python(ANALYSIS, workspace)


def test_message_names_rule_line_and_name(workspace: Path) -> None:
    with pytest.raises(NiniError) as caught:
        check_python("import pandas as pd\n\nimport subprocess\n", workspace)
    assert caught.value.message == "line 3: import of 'subprocess' is not allowed (rule forbidden-import)"
    assert caught.value.details == {"rule": "forbidden-import", "line": 3, "name": "subprocess"}


def test_all_violations_are_listed_and_the_first_is_raised(workspace: Path) -> None:
    code = "x = eval('1')\nimport os\nopen('/etc/passwd')\n!ls\n"
    found = find_violations(code, workspace)
    assert [(v.rule, v.line, v.name) for v in found] == [
        ("forbidden-call", 1, "eval"),
        ("forbidden-import", 2, "os"),
        ("path-outside-workspace", 3, "/etc/passwd"),
        ("forbidden-call", 4, "!"),
    ]
    with pytest.raises(NiniError, match="^\\[POLICY_VIOLATION\\] line 1: call of 'eval\\(\\)'"):
        check_python(code, workspace)


def test_uses_of_a_refused_import_are_reported_once(workspace: Path) -> None:
    found = find_violations("import subprocess as sp\nsp.run(['ls'])\nsp.call('x')", workspace)
    assert [(v.rule, v.line) for v in found] == [("forbidden-import", 1)]


@pytest.mark.parametrize("code", ["def f(:\n    pass", "x = (1,\n", "import os\nprint('unclosed", "x = (\n    !ls\n)"])
def test_code_that_does_not_parse_is_left_to_the_kernel(code: str, workspace: Path) -> None:
    # Nothing runs when a cell does not compile, and the kernel reports the SyntaxError with its line.
    assert find_violations(code, workspace) == []
    check_python(code, workspace)


def test_unparseable_magic_body_is_refused(workspace: Path) -> None:
    found = find_violations("%%time\nimport os\n)", workspace)
    assert [(v.rule, v.line, v.name) for v in found] == [("uncheckable", 1, "%%time")]


@pytest.mark.parametrize("code", ["-" * 100_000 + "1", "a" + ".b" * 50_000, "f" + "(1)" * 5_000])
def test_code_too_deep_to_check_is_refused(code: str, workspace: Path) -> None:
    # ast.parse gives up where compile() may not: letting such code through would skip every rule.
    assert [(v.rule, v.line) for v in find_violations(code, workspace)] == [("uncheckable", 1)]


def test_absolute_paths_inside_the_workspace_are_allowed(workspace: Path) -> None:
    check_python(f"open({str(workspace / 'data.csv')!r})\npd.read_csv({str(workspace)!r} + '/x')", workspace)
    check_python(f"df.to_csv({str(workspace / 'artifacts' / 'out.csv')!r})", workspace)
    sibling = str(workspace) + "-other/data.csv"  # shares the prefix, is not inside
    assert [v.rule for v in find_violations(f"open({sibling!r})", workspace)] == ["path-outside-workspace"]


def test_workspace_reached_through_a_symlink(tmp_path: Path, workspace: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(workspace)
    check_python(f"open({str(workspace / 'a.csv')!r})\nopen({str(link / 'b.csv')!r})", link)


def test_ipython_transform_keeps_single_line_escapes_one_to_one(workspace: Path) -> None:
    from IPython.core.inputtransformer2 import TransformerManager

    code = "a = 1\n!ls\nb = !pwd\n%matplotlib inline\nif a:\n    !echo hi\nc = eval('2')\n"
    python = TransformerManager().transform_cell(code)
    assert len(python.splitlines()) == len(code.splitlines())
    assert [(v.line, v.name) for v in find_violations(code, workspace)] == [(2, "!"), (3, "!"), (6, "!"), (7, "eval")]


def test_indented_user_code_is_reported_at_its_line(workspace: Path) -> None:
    code = textwrap.dedent(
        """\
        import pandas as pd


        def load(name):
            try:
                return pd.read_csv(name)
            except FileNotFoundError:
                import shutil
                return None
        """
    )
    assert [(v.rule, v.line) for v in find_violations(code, workspace)] == [("forbidden-import", 8)]
