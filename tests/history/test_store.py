"""HistoryStore round trips: what goes in comes back, as JSON-ready dicts, with stable errors."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest

from nini.errors import ErrorCode, NiniError
from nini.history.store import HistoryStore
from tests.history.conftest import execution_row

UNICODE = {"标题": "销售分析 📈", "nested": {"list": [1, 2.5, None, True, "ü"], "empty": {}}, "quote": 'a"b\\c\n'}


def raises(code: ErrorCode, fn, *args, **kwargs) -> NiniError:  # noqa: ANN001 - any store method
    with pytest.raises(NiniError) as caught:
        fn(*args, **kwargs)
    assert caught.value.code is code, caught.value
    return caught.value


# sessions


def test_a_session_round_trips_with_its_metadata(store: HistoryStore) -> None:
    created = store.create_session(session_id="s-fixed", title="Sales", metadata=UNICODE)

    assert created == store.get_session("s-fixed")
    assert created["title"] == "Sales" and created["metadata"] == UNICODE
    assert created["created_at"] == created["updated_at"]
    assert datetime.fromisoformat(created["created_at"]).tzinfo == UTC


def test_a_session_id_is_generated_when_none_is_given(store: HistoryStore) -> None:
    session_id = store.create_session()["id"]
    assert session_id.startswith("s") and len(session_id) == 13
    assert session_id != store.create_session()["id"]


def test_a_duplicate_session_is_a_conflict_and_an_unknown_one_not_found(store: HistoryStore) -> None:
    store.create_session(session_id="s1")
    raises(ErrorCode.CONFLICT, store.create_session, session_id="s1")
    raises(ErrorCode.NOT_FOUND, store.get_session, "nope")
    raises(ErrorCode.NOT_FOUND, store.touch_session, "nope")


def test_sessions_are_listed_newest_first_with_their_counts(store: HistoryStore) -> None:
    old, new = store.create_session(title="old")["id"], store.create_session(title="new")["id"]
    for _ in range(2):
        call = store.start_tool_call(old, "run_code", {})
        store.finish_tool_call(call["id"], status="succeeded", execution=execution_row())
    store.start_tool_call(old, "load_dataset", {})

    listed = store.list_sessions()

    assert [s["id"] for s in listed] == [new, old]
    assert (listed[1]["tool_call_count"], listed[1]["execution_count"]) == (3, 2)
    assert (listed[0]["tool_call_count"], listed[0]["execution_count"]) == (0, 0)
    assert [s["id"] for s in store.list_sessions(limit=1)] == [new]


def test_touching_a_session_moves_only_updated_at(store: HistoryStore, session_id: str) -> None:
    before = store.get_session(session_id)
    touched = store.touch_session(session_id)
    assert touched["updated_at"] > before["updated_at"]
    assert touched["created_at"] == before["created_at"]
    assert store.get_session(session_id) == touched


# messages


def test_messages_come_back_in_the_order_they_were_added(store: HistoryStore, session_id: str) -> None:
    store.add_message(session_id, "user", "分析一下销售数据", turn_id="t1", metadata={"lang": "zh"})
    store.add_message(session_id, "assistant", None, turn_id="t1", metadata={"tool_calls": [{"id": "call_1"}]})
    store.add_message(session_id, "tool", '{"ok": true}', turn_id="t1", tool_call_id="call_1")

    listed = store.list_messages(session_id)

    assert [(m["role"], m["content"]) for m in listed] == [
        ("user", "分析一下销售数据"),
        ("assistant", None),
        ("tool", '{"ok": true}'),
    ]
    assert listed[0]["metadata"] == {"lang": "zh"} and listed[2]["tool_call_id"] == "call_1"
    assert store.list_messages("other") == []


def test_a_message_for_an_unknown_session_is_not_found(store: HistoryStore) -> None:
    raises(ErrorCode.NOT_FOUND, store.add_message, "nope", "user", "hi")


# tool calls


def test_a_tool_call_starts_running_and_finishes_with_its_result(store: HistoryStore, session_id: str) -> None:
    started = store.start_tool_call(session_id, "add_numbers", {"a": 2}, turn_id="t1")
    assert started["status"] == "running" and started["arguments"] == {"a": 2} and started["turn_id"] == "t1"
    assert started["ended_at"] is None and started["owner"].endswith(f":{os.getpid()}")

    finished = store.finish_tool_call(started["id"], status="succeeded", result=UNICODE, result_summary="ok")

    assert finished["status"] == "succeeded" and finished["result"] == UNICODE
    assert finished["ended_at"] >= finished["started_at"] and finished["duration_ms"] >= 0
    assert finished["execution"] is None
    assert store.get_tool_call(started["id"]) == {
        k: v for k, v in finished.items() if k not in ("execution", "superseded_files", "events")
    }


def test_a_failed_call_keeps_its_error_code(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {"code": "1/0"})
    finished = store.finish_tool_call(call["id"], status="failed", error_code="TIMEOUT", result={"error": "slow"})
    assert (finished["status"], finished["error_code"]) == ("failed", "TIMEOUT")


@pytest.mark.parametrize("status", ["succeeded", "failed", "interrupted"])
def test_finishing_a_call_twice_is_a_conflict(store: HistoryStore, session_id: str, status: str) -> None:
    call = store.start_tool_call(session_id, "x", {})
    store.finish_tool_call(call["id"], status=status)
    error = raises(ErrorCode.CONFLICT, store.finish_tool_call, call["id"], status="succeeded")
    assert status in error.message
    assert store.get_tool_call(call["id"])["status"] == status


@pytest.mark.parametrize(
    ("call_kwargs", "code"),
    [
        ({"status": "running"}, ErrorCode.INVALID_ARGUMENT),
        ({"status": "done"}, ErrorCode.INVALID_ARGUMENT),
        ({"status": "succeeded", "execution": {**execution_row(), "colour": "red"}}, ErrorCode.INVALID_ARGUMENT),
        ({"status": "succeeded", "artifacts": [{"name": "a", "path": "a", "bytes": 1}]}, ErrorCode.INVALID_ARGUMENT),
        (
            {"status": "succeeded", "datasets": [{"name": "d", "path": "d", "session_id": "x"}]},
            ErrorCode.INVALID_ARGUMENT,
        ),
    ],
)
def test_bad_finish_arguments_are_refused_and_the_call_stays_running(
    store: HistoryStore, session_id: str, call_kwargs: dict, code: ErrorCode
) -> None:
    call = store.start_tool_call(session_id, "x", {})
    raises(code, store.finish_tool_call, call["id"], **call_kwargs)
    assert store.get_tool_call(call["id"])["status"] == "running"


def test_tool_call_errors_for_unknown_ids(store: HistoryStore, session_id: str) -> None:
    raises(ErrorCode.NOT_FOUND, store.start_tool_call, "nope", "x", {})
    raises(ErrorCode.NOT_FOUND, store.finish_tool_call, "nope", status="succeeded")
    raises(ErrorCode.NOT_FOUND, store.get_tool_call, "nope")
    store.start_tool_call(session_id, "x", {}, call_id="c1")
    raises(ErrorCode.CONFLICT, store.start_tool_call, session_id, "x", {}, call_id="c1")


def test_tool_calls_are_listed_in_start_order(store: HistoryStore, session_id: str) -> None:
    ids = [store.start_tool_call(session_id, f"tool{i}", {"i": i})["id"] for i in range(20)]
    store.finish_tool_call(ids[5], status="succeeded")
    assert [c["id"] for c in store.list_tool_calls(session_id)] == ids


# finish_tool_call with an execution, artifacts and datasets


def test_finish_records_execution_artifacts_and_datasets_together(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {"code": "plot()"})
    execution = execution_row(
        id="x-given",
        label="sales chart",
        result={"total": 3},
        error=None,
        save_as="clean",
        outputs=[{"output_type": "stream", "name": "stdout", "text": "hi\n"}],
        artifacts=[{"name": "chart", "path": "artifacts/chart.png", "format": "png", "kind": "chart"}],
        datasets_saved=["clean"],
    )
    artifact = {"name": "chart", "path": "artifacts/chart.png", "format": "png", "kind": "chart", "size_bytes": 1234}
    dataset = {"name": "clean", "path": "datasets/clean.parquet", "rows": 10, "columns": ["a", "b"]}

    finished = store.finish_tool_call(
        call["id"], status="succeeded", execution=execution, artifacts=[artifact], datasets=[dataset]
    )

    stored = finished["execution"]
    assert stored == store.get_execution("x-given")
    assert stored["tool_call_id"] == call["id"] and stored["session_id"] == session_id
    assert {k: stored[k] for k in execution} == execution
    (listed_artifact,) = store.list_artifacts(session_id)
    assert {k: listed_artifact[k] for k in artifact} == artifact and listed_artifact["execution_id"] == "x-given"
    saved = store.get_dataset(session_id, "clean")
    assert {k: saved[k] for k in dataset} == dataset and saved["source_execution_id"] == "x-given"
    assert finished["superseded_files"] == []


def test_a_dataset_saved_again_names_the_file_it_replaced(store: HistoryStore, session_id: str) -> None:
    """A new version's record says which file no record names any more, for the caller to remove."""
    versions = [f"datasets/clean@1-2-0000000{n}.parquet" for n in range(3)]
    replaced = []
    for path in versions:
        call = store.start_tool_call(session_id, "run_code", {})
        finished = store.finish_tool_call(call["id"], status="succeeded", datasets=[{"name": "clean", "path": path}])
        replaced.append(finished["superseded_files"])
    assert (
        replaced == [[], versions[:1], versions[1:2]] and store.get_dataset(session_id, "clean")["path"] == versions[2]
    )
    call = store.start_tool_call(session_id, "run_code", {})  # the same file again replaces nothing
    assert (
        store.finish_tool_call(call["id"], status="succeeded", datasets=[{"name": "clean", "path": versions[2]}])[
            "superseded_files"
        ]
        == []
    )


def test_an_execution_id_is_generated_when_none_is_given(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {})
    execution = store.finish_tool_call(call["id"], status="succeeded", execution=execution_row())["execution"]
    assert execution["id"].startswith("x") and len(execution["id"]) == 13
    assert execution["tool_name"] == "run_code"


def test_a_failure_midway_through_finish_leaves_nothing_behind(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {})
    # the tool call update succeeds, then the execution insert violates the status CHECK constraint
    error = raises(
        ErrorCode.INVALID_ARGUMENT,
        store.finish_tool_call,
        call["id"],
        status="succeeded",
        execution=execution_row(status="bogus", code="secret_token = 'hunter2'"),
        artifacts=[{"name": "a", "path": "artifacts/a.png"}],
        datasets=[{"name": "d", "path": "datasets/d.parquet"}],
    )
    assert "hunter2" not in str(error) and "hunter2" not in json.dumps(error.to_dict())

    assert store.get_tool_call(call["id"])["status"] == "running"
    assert store.get_tool_call(call["id"])["ended_at"] is None
    assert store.list_executions(session_id) == []
    assert store.list_artifacts(session_id) == [] and store.list_datasets(session_id) == []
    # and the call can still be finished properly
    assert store.finish_tool_call(call["id"], status="succeeded", execution=execution_row())["execution"]


def test_a_late_failure_in_finish_rolls_back_the_execution_too(store: HistoryStore, session_id: str) -> None:
    call = store.start_tool_call(session_id, "run_code", {})
    # the last write (an artifact naming an execution that does not exist) fails
    raises(
        ErrorCode.INVALID_ARGUMENT,
        store.finish_tool_call,
        call["id"],
        status="succeeded",
        execution=execution_row(),
        artifacts=[{"name": "a", "path": "a", "execution_id": "x-missing"}],
    )
    assert store.get_tool_call(call["id"])["status"] == "running"
    assert store.list_executions(session_id) == [] and store.list_artifacts(session_id) == []


def test_a_dataset_saved_again_replaces_its_row(store: HistoryStore, session_id: str) -> None:
    for rows in (10, 7):
        call = store.start_tool_call(session_id, "load_dataset", {})
        store.finish_tool_call(
            call["id"], status="succeeded", datasets=[{"name": "sales", "path": "datasets/sales.parquet", "rows": rows}]
        )
    (dataset,) = store.list_datasets(session_id)
    assert dataset["rows"] == 7 and dataset["updated_at"] > dataset["created_at"]
    assert dataset["source_execution_id"] is None
    raises(ErrorCode.NOT_FOUND, store.get_dataset, session_id, "other")


def test_executions_are_listed_in_order_and_filtered_by_language(store: HistoryStore, session_id: str) -> None:
    ids = []
    for language in ("python", "r", "python"):
        call = store.start_tool_call(session_id, "run_code" if language == "python" else "run_r_code", {})
        row = execution_row(language=language, status="failed", retry_of=ids[-1] if ids else None)
        ids.append(store.finish_tool_call(call["id"], status="failed", execution=row)["execution"]["id"])

    assert [e["id"] for e in store.list_executions(session_id)] == ids
    assert [e["id"] for e in store.list_executions(session_id, language="r")] == [ids[1]]
    assert store.get_execution(ids[2])["retry_of"] == ids[1]
    raises(ErrorCode.NOT_FOUND, store.get_execution, "nope")


# JSON


def test_values_json_cannot_hold_are_stored_as_text_instead_of_failing(store: HistoryStore, session_id: str) -> None:
    moment = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    call = store.start_tool_call(session_id, "x", {"when": moment})
    assert call["arguments"] == {"when": str(moment)}


def test_every_api_returns_json_serialisable_values(store: HistoryStore, session_id: str) -> None:
    store.add_message(session_id, "user", "hi", metadata=UNICODE)
    call = store.start_tool_call(session_id, "run_code", UNICODE)
    finished = store.finish_tool_call(
        call["id"],
        status="succeeded",
        result=UNICODE,
        execution=execution_row(result=UNICODE, error=UNICODE),
        artifacts=[{"name": "a", "path": "a.png"}],
        datasets=[{"name": "d", "path": "d.parquet", "columns": ["é"]}],
    )
    event = store.append_event(session_id, "tool_result", UNICODE)
    results = [
        store.get_session(session_id),
        store.list_sessions(),
        store.touch_session(session_id),
        store.list_messages(session_id),
        call,
        finished,
        store.get_tool_call(call["id"]),
        store.list_tool_calls(session_id),
        store.list_executions(session_id),
        store.get_execution(finished["execution"]["id"]),
        store.list_artifacts(session_id),
        store.list_datasets(session_id),
        store.get_dataset(session_id, "d"),
        event,
        store.list_events(session_id),
    ]
    for result in results:
        assert json.loads(json.dumps(result, ensure_ascii=False)) == result
    assert finished["execution"]["error"] == UNICODE and event["data"] == UNICODE
