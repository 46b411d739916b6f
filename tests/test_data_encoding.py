"""Data as it comes (issue 35, item 6): CSV files in the encodings and with the separators real users
have load with the right shape, through ``load_dataset`` (invoke, the limited reader child) and the
real ``nini`` command; what was detected and what was given is said in the result, the step's
record and the CLI's line; Excel loads through openpyxl, and says how to install it when missing."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from tests.conftest import Harness, runtime_harness, scripted_model_settings, write_settings
from tests.llm_server import text
from tests.timeouts import timeout

NINI = Path(sys.executable).with_name("nini")
SALES_GBK = "地区;销售额;占比\n华北;120;0,25\n华南;98;0,5\n西部;77;1,75\n"
TABLES = {  # file name -> (bytes, columns, first row, encodings it may be reported as, separator, decimal mark)
    "cafes.csv": (
        "name,city,price\ncafé,Zürich,3.5\nthé,Genève,2.0\n".encode("latin-1"),
        ["name", "city", "price"],
        ["café", "Zürich", 3.5],
        {"cp1252", "iso8859-1"},
        ",",
        ".",
    ),
    "regions.csv": (
        "地区,销售额,产品\n华北,120,苹果\n华南,98,香蕉\n西部,77,橙子\n".encode("gbk"),
        ["地区", "销售额", "产品"],
        ["华北", 120, "苹果"],
        {"gbk", "gb18030"},
        ",",
        ".",
    ),
    "tiny_gbk.csv": (
        "城市,人口\n北京,2189\n".encode("gbk"),
        ["城市", "人口"],
        ["北京", 2189],
        {"gbk", "gb18030"},
        ",",
        ".",
    ),
    "european.csv": (
        b"region;revenue;share\nnorth;1,5;0,25\nsouth;2,75;0,5\n",
        ["region", "revenue", "share"],
        ["north", 1.5, 0.25],
        {"utf-8"},
        ";",
        ",",
    ),
    "tabbed.txt": (b"a\tb\tnote\n1\t2\tx, y; z\n", ["a", "b", "note"], [1, 2, "x, y; z"], {"utf-8"}, "\t", "."),
    "tabbed.tsv": (b"a\tb\n1\t2\n", ["a", "b"], [1, 2], {"utf-8"}, "\t", "."),
    "piped.csv": (b"a|b\n1|2\n", ["a", "b"], [1, 2], {"utf-8"}, "|", "."),
    "wide.csv": ("a,b\ncafé,1\n".encode("utf-16"), ["a", "b"], ["café", 1], {"utf-16"}, ",", "."),
    "marked.csv": ("\ufeffa,b\nx,1\n".encode(), ["a", "b"], ["x", 1], {"utf-8-sig"}, ",", "."),
    # commas inside quotes, semicolons inside quotes: a comma-separated file, not a ';' one
    "quoted.csv": (
        b'name,note,n\n"Smith, J","a;b;c",1\n"Doe; K","x, y",2\n',
        ["name", "note", "n"],
        ["Smith, J", "a;b;c", 1],
        {"utf-8"},
        ",",
        ".",
    ),
}


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    yield from runtime_harness(tmp_path_factory, {"ui": {"language": "en"}})


def load(harness: Harness, session: Any, tmp_path: Path, file: str, data: bytes, **arguments: Any) -> Any:
    """``data`` as the user's file ``file``, copied into the session and loaded through invoke."""
    source = tmp_path / file
    source.write_bytes(data)
    return harness.call(session, "load_dataset", path=session.upload(source), **arguments)


def stored_frame(harness: Harness, session: Any, name: str) -> pd.DataFrame:
    dataset = harness.runtime.store.get_dataset(session.id, name)
    return pd.read_parquet(session.workspace.root / dataset["path"])


@pytest.mark.parametrize("file", sorted(TABLES))
def test_a_text_table_loads_with_its_shape_encoding_and_separator_detected(
    harness: Harness, tmp_path: Path, file: str
) -> None:
    data, columns, first, encodings, sep, decimal = TABLES[file]
    session = harness.session()
    loaded = load(harness, session, tmp_path, file, data)
    assert loaded.success, loaded.error
    result = loaded.result
    frame = stored_frame(harness, session, result["name"])
    assert list(frame.columns) == columns and result["columns"] == columns
    assert frame.iloc[0].tolist() == first and result["shape"] == list(frame.shape)
    assert result["encoding"] in encodings and result["encoding_detected"] is True
    assert (result["sep"], result["sep_detected"], result["decimal"]) == (sep, True, decimal)
    record = harness.runtime.store.get_tool_call(loaded.tool_call_id)  # the step's record says it too
    assert f"encoding {result['encoding']}, detected" in record["result_summary"], record["result_summary"]


def test_a_semicolon_file_with_decimal_commas_has_numbers_not_one_column(harness: Harness, tmp_path: Path) -> None:
    session = harness.session()
    loaded = load(harness, session, tmp_path, "sales.csv", SALES_GBK.encode("gbk"))
    assert loaded.success, loaded.error
    frame = stored_frame(harness, session, "sales")
    assert frame.shape == (3, 3) and frame["占比"].tolist() == [0.25, 0.5, 1.75] and frame["销售额"].sum() == 295
    assert (loaded.result["sep"], loaded.result["decimal"]) == (";", ",")


def test_what_is_given_wins_over_what_would_be_detected(harness: Harness, tmp_path: Path) -> None:
    session = harness.session()
    both = b"a;b,c\n1;2,3\n"  # detection keeps the comma on a tie; the user says ';'
    detected = load(harness, session, tmp_path, "both.csv", both, name="detected")
    assert detected.result["columns"] == ["a;b", "c"] and detected.result["sep_detected"] is True
    given = load(harness, session, tmp_path, "both.csv", both, name="given", sep=";")
    assert given.result["columns"] == ["a", "b,c"] and (given.result["sep"], given.result["sep_detected"]) == (
        ";",
        False,
    )
    tabbed = load(harness, session, tmp_path, "both.csv", b"a\tb\n1\t2\n", name="tabbed", sep="tab")
    assert tabbed.result["columns"] == ["a", "b"] and tabbed.result["sep"] == "\t"

    utf8 = load(harness, session, tmp_path, "cafe.csv", "name\ncafé\n".encode(), name="as_latin", encoding="Latin-1")
    assert utf8.success and (utf8.result["encoding"], utf8.result["encoding_detected"]) == ("iso8859-1", False)
    assert stored_frame(harness, session, "as_latin")["name"].tolist() == ["cafÃ©"]  # read as the user said
    record = harness.runtime.store.get_tool_call(utf8.tool_call_id)
    assert "encoding iso8859-1, given" in record["result_summary"] and record["arguments"]["encoding"] == "Latin-1"


def test_a_file_no_encoding_fits_or_a_wrong_one_given_says_how_to_name_it(harness: Harness, tmp_path: Path) -> None:
    session = harness.session()
    binary = load(harness, session, tmp_path, "noise.csv", bytes(range(256)) * 64)
    assert not binary.success and binary.error["code"] == "INVALID_ARGUMENT"
    message = binary.error["message"]
    assert "'noise.csv'" in message and "--encoding" in message and "encoding=" in message
    assert str(tmp_path) not in message and str(harness.runtime.settings.home) not in message

    wrong = load(harness, session, tmp_path, "regions.csv", "地区\n华北\n".encode("gbk"), encoding="utf-8")
    assert (
        wrong.error["code"] == "INVALID_ARGUMENT"
        and "'regions.csv' cannot be read as utf-8 (as given)" in wrong.error["message"]
    )

    # only the first MiB is read to guess: past it, a file that changes encoding is refused with the hint
    mixed = b"a,b\n" + b"x,1\n" * (300 * 1024) + "华北,2\n".encode("gbk")
    late = load(harness, session, tmp_path, "mixed.csv", mixed)
    assert late.error["code"] == "INVALID_ARGUMENT", late.error
    assert "detected from its first 1 MB" in late.error["message"] and "--encoding" in late.error["message"]
    assert load(harness, session, tmp_path, "mixed.csv", mixed, encoding="gb18030").result["shape"] == [
        300 * 1024 + 1,
        2,
    ]

    for arguments, said in (
        ({"encoding": "klingon"}, "unknown encoding 'klingon'"),
        ({"sep": ";;"}, "the separator must be one character"),
    ):
        refused = load(harness, session, tmp_path, "cafes.csv", b"a\n1\n", **arguments)
        assert refused.error["code"] == "INVALID_ARGUMENT" and said in refused.error["message"], refused.error


def test_read_file_reads_an_upload_as_its_load_did(harness: Harness, tmp_path: Path) -> None:
    """The agent's other reader of a data file (read_file) decodes it with the encoding its load
    used (given or detected, from the step's record), else detects it; not as UTF-8 regardless."""
    session = harness.session()
    loaded = load(harness, session, tmp_path, "sales.csv", SALES_GBK.encode("gbk"))
    shown = harness.call(session, "read_file", path="uploads/sales.csv")
    assert shown.result["text"] == SALES_GBK and shown.result["encoding"] == loaded.result["encoding"]

    load(harness, session, tmp_path, "cafe.csv", "name\ncafé\n".encode(), encoding="latin-1")
    as_loaded = harness.call(session, "read_file", path="./uploads/cafe.csv")
    assert (as_loaded.result["text"], as_loaded.result["encoding"]) == ("name\ncafÃ©\n", "iso8859-1")

    never_loaded = tmp_path / "notes.txt"
    never_loaded.write_bytes("备注：华北地区\n".encode("gbk"))
    session.upload(never_loaded)
    assert harness.call(session, "read_file", path="uploads/notes.txt").result["text"] == "备注：华北地区\n"


def write_book(path: Path) -> None:
    pytest.importorskip("openpyxl", reason="the excel extra (openpyxl) writes the workbook")
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        pd.DataFrame({"地区": ["华北", "华南"], "revenue": [120.5, 98.0]}).to_excel(
            writer, sheet_name="Sales", index=False
        )
        pd.DataFrame({"note": ["x", "y", "z"]}).to_excel(writer, sheet_name="Notes", index=False)


def test_an_excel_workbook_loads_its_first_sheet_or_the_one_named(harness: Harness, tmp_path: Path) -> None:
    book = tmp_path / "book.xlsx"
    write_book(book)
    session = harness.session()
    first = harness.call(session, "load_dataset", path=session.upload(book))
    assert first.success, first.error
    assert (first.result["sheet"], first.result["sheets"], first.result["shape"]) == (
        "Sales",
        ["Sales", "Notes"],
        [2, 2],
    )
    assert first.result["encoding"] is None and first.result["sep"] is None
    assert stored_frame(harness, session, "book")["revenue"].tolist() == [120.5, 98.0]
    assert "sheet 'Sales' (1 of 2)" in harness.runtime.store.get_tool_call(first.tool_call_id)["result_summary"]
    for sheet in ("Notes", 1, "1"):
        named = harness.call(session, "load_dataset", path="uploads/book.xlsx", name="notes", sheet=sheet)
        assert (named.result["sheet"], named.result["shape"]) == ("Notes", [3, 1]), sheet
    missing = harness.call(session, "load_dataset", path="uploads/book.xlsx", sheet="Nope")
    assert missing.error["code"] == "INVALID_ARGUMENT" and "its sheets: Sales, Notes" in missing.error["message"]


# The real command, as a user runs it --------------------------------------------------------------


def nini(
    project: Path, *args: str, stdin: str = "", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(NINI), "--project-dir", str(project), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout(300),
    )


def test_the_cli_reads_a_gbk_semicolon_file_detected_or_as_given(project_dir: Path, tmp_path: Path) -> None:
    sales = tmp_path / "sales.csv"
    sales.write_bytes(SALES_GBK.encode("gbk"))
    code = "print(list(df.columns), df['占比'].sum(), len(df))"
    given = nini(project_dir, "run-code", "-", "--data", str(sales), "--encoding", "gbk", "--sep", ";", stdin=code)
    assert given.returncode == 0, given.stderr
    assert given.stdout == "['地区', '销售额', '占比'] 2.5 3\n"
    assert (
        "dataset sales: 3 rows, 3 columns (encoding gbk, given; separator ';', given; decimal comma)\n" in given.stderr
    )

    detected = nini(project_dir, "run-code", "-", "--data", str(sales), stdin=code, env={"LANG": "zh_CN.UTF-8"})
    assert detected.returncode == 0, detected.stderr
    assert detected.stdout == "['地区', '销售额', '占比'] 2.5 3\n"
    assert "数据集 sales：3 行，3 列（编码 gb18030，自动识别；分隔符 ';'，自动识别；小数点为逗号）\n" in detected.stderr


def test_ask_reads_its_data_as_given(nini_home: Path, project_dir: Path, tmp_path: Path, llm_server: Any) -> None:
    write_settings(nini_home, scripted_model_settings(llm_server))
    sales = tmp_path / "sales.txt"
    sales.write_bytes(SALES_GBK.replace(";", "|").encode("gbk"))
    llm_server.reply(text("loaded"))
    asked = nini(project_dir, "ask", "What is in sales?", "--data", str(sales), "--encoding", "gb18030", "--sep", "|")
    assert asked.returncode == 0, asked.stderr
    assert (
        "dataset sales: 3 rows, 3 columns (encoding gb18030, given; separator '|', given; decimal comma)\n"
        in asked.stderr
    )


def test_the_cli_refuses_a_file_no_encoding_fits_with_the_option_to_name_it(project_dir: Path, tmp_path: Path) -> None:
    noise = tmp_path / "noise.csv"
    noise.write_bytes(bytes(range(256)) * 64)
    refused = nini(project_dir, "run-code", "-", "--data", str(noise), stdin="print(1)")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("error [INVALID_ARGUMENT]: the encoding of 'noise.csv' could not be detected")
    assert "--encoding" in refused.stderr and "Traceback" not in refused.stderr and str(tmp_path) not in refused.stderr
    bad = nini(project_dir, "run-code", "-", "--data", str(noise), "--sep", "ab", stdin="print(1)")
    assert bad.returncode == 1 and "error [INVALID_ARGUMENT]: the separator must be one character" in bad.stderr


def test_without_openpyxl_an_xlsx_file_says_to_install_the_excel_extra(
    nini_home: Path, project_dir: Path, tmp_path: Path
) -> None:
    book = tmp_path / "book.xlsx"
    write_book(book)
    blocker = (
        tmp_path / "no-openpyxl"
    )  # first on the reader's path: `import openpyxl` fails, as where it is not installed
    (blocker / "openpyxl").mkdir(parents=True)
    (blocker / "openpyxl" / "__init__.py").write_text("raise ImportError('No module named openpyxl')\n")
    write_settings(nini_home, {"execution": {"sandbox_read_only_paths": [str(blocker)]}})  # seen in the sandbox too
    pythonpath = os.pathsep.join(filter(None, [str(blocker), os.environ.get("PYTHONPATH")]))
    for language, words in (
        ("C.UTF-8", "reading .xlsx files needs openpyxl, which is not installed: pip install 'nini[excel]'"),
        ("zh_CN.UTF-8", "读取 .xlsx 文件需要 openpyxl，但它没有安装：pip install 'nini[excel]'"),
    ):
        refused = nini(
            project_dir,
            "run-code",
            "-",
            "--data",
            str(book),
            stdin="print(1)",
            env={"PYTHONPATH": pythonpath, "LANG": language},
        )
        assert refused.returncode == 1 and f"error [INVALID_ARGUMENT]: {words}\n" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
