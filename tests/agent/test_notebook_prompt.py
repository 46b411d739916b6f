"""notebook_section: the cells a turn's prompt shows, nearest the active cell first, within budget."""

from __future__ import annotations

from types import SimpleNamespace

from nini.agent.notebook_prompt import notebook_section
from nini.config import load_settings
from nini.notebook import NotebookCell, NotebookContext
from nini.tokens import count_tokens


def turn(
    notebook: NotebookContext | None,
    cells_tokens: int = 4000,
    *,
    isolation: str = "user_kernel",
    variables: object = None,
) -> SimpleNamespace:
    """What notebook_section reads of a Session: its notebook, its settings, where its code runs
    (%%nini's user kernel unless said) and its copies of the notebook's variables."""
    settings = load_settings(home="/nonexistent-nini-home", agent={"notebook_cells_tokens": cells_tokens})
    return SimpleNamespace(notebook=notebook, settings=settings, isolation=isolation, variables=variables)


def cells(count: int, size: int = 1) -> list[NotebookCell]:
    return [NotebookCell(n, "code", f"step_{n} = {n}\n" + "# note\n" * size, f"out {n}") for n in range(count)]


def test_no_notebook_no_section() -> None:
    assert notebook_section(turn(None), "hi") is None


def test_the_active_cell_and_those_above_it_within_the_budget_plus_attached_ones() -> None:
    notebook = NotebookContext(
        name="big.ipynb",
        cells=cells(200, size=20),
        active=150,
        attached_cells=[3],
        namespace="## Variables\n- `df`: DataFrame",
        attached_files={"notes.txt": "see Q3"},
    )
    text = notebook_section(turn(notebook, cells_tokens=1500), "why?")
    shown = [int(line.split(",")[0].removeprefix("[cell ")) for line in text.splitlines() if line.startswith("[cell ")]
    assert shown[0] == 3 and shown[-1] == 150 and shown == sorted(shown)  # in notebook order
    assert 151 not in shown and 140 in shown and 50 not in shown  # nearest above the active cell first
    assert "[cell 150, code, active]" in text and "[cell 3, code, attached]" in text and "out 150" in text
    cells_part = text.split("## The user's notebook")[1].split("### Attached file")[0]
    assert count_tokens(cells_part) <= 1500 + 100
    assert text.startswith("## Variables") and "### Attached file notes.txt" in text and "read_notebook" in text


def test_a_zero_budget_leaves_the_cells_out_but_keeps_the_variables() -> None:
    notebook = NotebookContext(cells=cells(3), active=2, namespace="## Variables\n- `x` = 1 (int)")
    text = notebook_section(turn(notebook, cells_tokens=0), "q")
    assert "[cell" not in text and "`x` = 1" in text


def test_the_variables_are_introduced_by_where_the_code_runs() -> None:
    from nini.execution.namespace import describe_namespace

    notebook = NotebookContext(namespace=describe_namespace({"sales": 1.5}, 500))
    here = notebook_section(turn(notebook), "q")
    assert "These are in the kernel where your code runs; use them by name." in here
    sandbox = notebook_section(turn(notebook, isolation="sandbox", variables=object()), "q")
    assert "These are in the notebook's kernel, not in yours" in sandbox and 'variables=["sales"]' in sandbox
    assert "larger than 512 MiB is not copied" in sandbox and "- `sales` = 1.5" in sandbox
    gateway = notebook_section(turn(notebook, isolation="gateway"), "q")
    assert "cannot be copied into it here" in gateway and "use them by name" not in gateway
