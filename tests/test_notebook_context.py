"""NotebookContext.from_json: the sidebar's notebook description, checked before a turn uses it."""

from __future__ import annotations

import pytest

from nini.errors import ErrorCode, NiniError
from nini.notebook import NotebookContext

GOOD = {
    "name": "sales.ipynb",
    "cells": [
        {"cell_type": "markdown", "source": "# Sales"},
        {"cell_type": "code", "source": "df = load()", "outputs": "Out: 3 rows"},
    ],
    "active": 1,
    "attached_cells": [0],
    "attached_files": {"notes.txt": "remember the returns"},
}


def test_cells_take_their_index_from_their_position() -> None:
    context = NotebookContext.from_json(GOOD)
    assert [(c.index, c.cell_type) for c in context.cells] == [(0, "markdown"), (1, "code")]
    assert context.cell(1).outputs == "Out: 3 rows" and context.cell(0).outputs == ""
    assert context.cell(2) is None
    assert (context.active, context.attached_cells, context.name) == (1, [0], "sales.ipynb")
    assert context.attached_files == {"notes.txt": "remember the returns"} and context.namespace is None


@pytest.mark.parametrize(
    "body, why",
    [
        ([], "must be an object"),
        ({"cells": "x"}, "cells must be a list"),
        ({"cells": [{"cell_type": "widget", "source": ""}]}, "cell 0"),
        ({"cells": [{"cell_type": "code", "source": ["a", "b"]}]}, "must be strings"),
        ({**GOOD, "active": 2}, "active"),
        ({**GOOD, "active": True}, "active"),
        ({**GOOD, "attached_cells": [5]}, "attached_cells"),
        ({**GOOD, "attached_files": {"a": 1}}, "attached_files"),
    ],
)
def test_a_body_of_another_shape_is_invalid_argument_saying_what(body: object, why: str) -> None:
    with pytest.raises(NiniError) as caught:
        NotebookContext.from_json(body)
    assert caught.value.code is ErrorCode.INVALID_ARGUMENT and why in caught.value.message
