"""run_code and load_dataset through ``invoke`` with real kernels: what is recorded, published and capped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import REPO_ROOT, Harness, runtime_harness

SALES = REPO_ROOT / "examples" / "data" / "sales.csv"


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory, {"execution": {"output_cap_chars": 2000}})


def test_a_run_is_recorded_with_its_execution_and_three_events(harness: Harness) -> None:
    session = harness.session()
    result = harness.call(session, "run_code", code="x = 6 * 7\nprint(x)\nresult = {'x': x}", label="answer")
    assert result.success and result.result["stdout"] == "42\n" and result.result["result"] == {"x": 42}
    call = harness.runtime.store.get_tool_call(result.tool_call_id)
    assert call["status"] == "succeeded" and call["tool_name"] == "run_code"
    (execution,) = harness.runtime.store.list_executions(session.id)
    assert execution["id"] == result.execution_id and execution["tool_call_id"] == result.tool_call_id
    assert execution["language"] == "python" and execution["code"].startswith("x = 6 * 7")
    assert execution["label"] == "answer" and execution["status"] == "succeeded" and execution["stdout"] == "42\n"
    events = harness.runtime.store.list_events(session.id)
    assert [e["type"] for e in events] == ["tool_call", "code_execution", "tool_result"]
    assert events[1]["data"]["execution_id"] == result.execution_id and events[1]["data"]["language"] == "python"


def test_the_result_has_exactly_the_contract_keys(harness: Harness) -> None:
    from nini.execution.outcome import CONTRACT_KEYS

    result = harness.call(harness.session(), "run_code", code="1 + 1")
    assert tuple(result.result) == CONTRACT_KEYS


def test_loaded_dataset_chart_and_saved_dataset_are_all_recorded(harness: Harness) -> None:
    session = harness.session()
    loaded = harness.call(session, "load_dataset", path=session.upload(SALES), name="sales")
    assert loaded.success and loaded.result["shape"] == [144, len(pd.read_csv(SALES).columns)]
    code = (
        "import matplotlib.pyplot as plt\n"
        "by_region = df.groupby('region', as_index=False)['revenue'].sum()\n"
        "by_region.plot.bar(x='region', y='revenue')\n"
        "output_df = by_region\n"
    )
    result = harness.call(
        session,
        "run_code",
        code=code,
        dataset_name="sales",
        save_as="by_region",
        label="Revenue by region",
        purpose="visualization",
    )
    assert result.success, result.error
    formats = sorted(a["format"] for a in result.result["artifacts"])
    assert formats == ["png", "svg"]
    stored = harness.runtime.store.list_artifacts(session.id)
    assert sorted(a["format"] for a in stored) == ["png", "svg"]
    assert all(a["execution_id"] == result.execution_id and a["size_bytes"] > 0 for a in stored)
    assert all((session.workspace.root / a["path"]).is_file() for a in stored)
    dataset = harness.runtime.store.get_dataset(session.id, "by_region")
    expected = pd.read_csv(SALES).groupby("region")["revenue"].sum()
    assert dataset["rows"] == len(expected) and dataset["source_execution_id"] == result.execution_id
    frame = pd.read_parquet(session.workspace.root / dataset["path"])
    assert frame.set_index("region")["revenue"].round(6).to_dict() == expected.round(6).to_dict()
    assert {d["name"] for d in harness.runtime.store.list_datasets(session.id)} == {"sales", "by_region"}


def test_100_kb_of_output_is_capped_for_the_model_and_kept_whole(harness: Harness) -> None:
    session = harness.session()
    result = harness.call(session, "run_code", code="print('y' * 100_000, end='')")
    assert result.success and len(result.result["stdout"]) == 100_000
    cap = harness.runtime.settings.execution.output_cap_chars
    text = result.text_for_llm(cap)
    assert len(text) <= cap + 400 and "characters cut" in text
    assert f"executions/{result.execution_id}/stdout.txt" in text
    assert json.loads(text)["success"] is True  # still valid JSON after the cut
    assert harness.runtime.store.get_execution(result.execution_id)["stdout"] == "y" * 100_000
    assert (session.workspace.executions_dir / result.execution_id / "stdout.txt").read_text() == "y" * 100_000


def test_a_huge_output_is_stored_once_whole_in_the_workspace_and_bounded_in_the_record(harness: Harness) -> None:
    session = harness.session()
    result = harness.call(session, "run_code", code="print('a' * 600_000 + 'b' * 600_000, end='')\nx = 1")
    assert result.success
    whole = (session.workspace.executions_dir / result.execution_id / "stdout.txt").read_text()
    assert whole == "a" * 600_000 + "b" * 600_000
    store = harness.runtime.store
    row = store.get_execution(result.execution_id)
    (stream,) = [o for o in row["outputs"] if o["output_type"] == "stream"]
    call = store.get_tool_call(result.tool_call_id)
    for text in (row["stdout"], stream["text"], call["result"]["stdout"], result.result["stdout"]):
        assert len(text) < 101_000 and text.startswith("a" * 50_000) and text.endswith("b" * 50_000)
        assert (
            "1,100,000 characters left out of the record; the whole output is "
            f"executions/{result.execution_id}/stdout.txt" in text
        )


def test_when_the_workspace_refuses_the_file_the_record_keeps_the_whole_text(harness: Harness, tmp_path) -> None:  # noqa: ANN001
    session = harness.session()
    executions = session.workspace.executions_dir
    executions.rmdir()
    executions.symlink_to(tmp_path)  # agent code can put a link there; nini never writes through it
    result = harness.call(session, "run_code", code="print('z' * 150_000, end='')")
    assert result.success and result.full_text_at is None and list(tmp_path.iterdir()) == []
    assert harness.runtime.store.get_execution(result.execution_id)["stdout"] == "z" * 150_000


def test_short_output_is_not_written_to_a_file(harness: Harness) -> None:
    session = harness.session()
    result = harness.call(session, "run_code", code="print('short')")
    assert result.full_text_at is None and not (session.workspace.executions_dir / result.execution_id).exists()


def test_a_corrected_step_points_at_the_failure_it_corrects(harness: Harness) -> None:
    session = harness.session()
    failed = harness.call(session, "run_code", code="total = undefined_name", label="total")
    assert not failed.success and failed.error["code"] == "CODE_ERROR" and failed.error["line"] == 1
    fixed = harness.call(session, "run_code", code="total = 3", label="total")
    again = harness.call(session, "run_code", code="total = 4", label="total")
    store = harness.runtime.store
    assert store.get_execution(fixed.execution_id)["retry_of"] == failed.execution_id
    assert store.get_execution(again.execution_id)["retry_of"] is None  # it re-runs a success, not a failure
    assert store.get_execution(failed.execution_id)["status"] == "failed"


def test_a_policy_refusal_is_recorded_and_nothing_runs(harness: Harness) -> None:
    session = harness.session()
    result = harness.call(session, "run_code", code="import os\nos.system('touch pwned')")
    assert not result.success and result.error["code"] == "POLICY_VIOLATION" and result.error["line"] == 1
    assert not (session.workspace.root / "pwned").exists()
    (execution,) = harness.runtime.store.list_executions(session.id)
    assert execution["status"] == "failed" and execution["error"]["code"] == "POLICY_VIOLATION"
    assert harness.runtime.store.get_tool_call(result.tool_call_id)["error_code"] == "POLICY_VIOLATION"


@pytest.mark.parametrize(
    "arguments",
    [
        {"code": "1", "purpose": "fun"},
        {"code": "1", "timeout_s": -1},
        {"code": "1", "save_as": "../escape"},
        {"code": "1", "dataset_name": "no/such"},
        {"code": 5},
    ],
)
def test_bad_arguments_are_invalid_and_recorded(harness: Harness, arguments: dict[str, Any]) -> None:
    session = harness.session()
    result = harness.call(session, "run_code", **arguments)
    assert not result.success and result.error["code"] == "INVALID_ARGUMENT"
    assert harness.runtime.store.get_tool_call(result.tool_call_id)["status"] == "failed"
    assert harness.runtime.store.list_executions(session.id) == []


def test_load_dataset_refuses_paths_outside_the_workspace(harness: Harness, tmp_path: Path) -> None:
    outside = tmp_path / "secret.csv"
    outside.write_text("a\n1\n")
    session = harness.session()
    for path in (str(outside), "../../secret.csv"):
        result = harness.call(session, "load_dataset", path=path)
        assert result.error["code"] == "INVALID_ARGUMENT", path
    assert harness.call(session, "load_dataset", path="nothing.csv").error["code"] == "NOT_FOUND"


def test_state_is_per_session_through_invoke(harness: Harness) -> None:
    one, two = harness.session(), harness.session()
    harness.call(one, "run_code", code="secret = 'one'")
    result = harness.call(two, "run_code", code="try:\n    result = secret\nexcept NameError:\n    result = 'unset'")
    assert result.result["result"] == "unset"
    assert harness.call(one, "run_code", code="result = secret").result["result"] == "one"


def test_upload_copies_into_the_workspace_and_refuses_missing_files(harness: Harness, tmp_path: Path) -> None:
    session = harness.session()
    relative = session.upload(SALES)
    assert relative == "uploads/sales.csv"
    assert (session.workspace.root / relative).read_bytes() == SALES.read_bytes()
    assert not list((session.workspace.root / "uploads").glob(".*partial"))
    from nini.errors import NiniError

    with pytest.raises(NiniError) as raised:
        session.upload(tmp_path / "missing.csv")
    assert raised.value.code.value == "NOT_FOUND"


def test_a_positional_index_left_by_sorting_is_not_a_column(harness) -> None:  # noqa: ANN001
    session = harness.session()
    result = harness.call(
        session,
        "run_code",
        code="import pandas as pd\nframe = pd.DataFrame({'a': [3, 1, 2]})\n"
        "output_df = frame.sort_values('a')\nby_key = frame.set_index('a')",
        save_as="sorted",
    )
    assert result.result["dataframe_preview"]["columns"] == ["a"]
    assert result.result["dataframe_preview"]["rows"] == [[1], [2], [3]]
    named = harness.call(session, "run_code", code="output_df = by_key.assign(b=1)")
    assert named.result["dataframe_preview"]["columns"] == ["a", "b"]  # a named index is kept


def test_the_model_cannot_ask_for_the_users_kernel(harness: Harness) -> None:
    """Only a user's client chooses the notebook kernel (unsandboxed): run_code has no such argument."""
    session = harness.session()
    schema = harness.runtime.registry.function("run_code").input_schema()
    assert "kernel_id" not in json.dumps(schema)
    result = harness.call(session, "run_code", code="result = 1", kernel_id="any-notebook-kernel")
    assert not result.success and result.error["code"] == "INVALID_ARGUMENT"
    assert harness.runtime.store.list_executions(session.id) == []
