"""Key findings: relevant steps only (no failed, superseded or rolled-back ones), noise removed."""

from __future__ import annotations

from typing import Any

import pytest

from nini.report.findings import business_text, key_findings, relevant_steps, render_value
from nini.report.model import Step
from nini.report.noise import clean_output

MEANINGFUL = "mean revenue: 42"


def step(id: str, order: int, *, status: str = "succeeded", **fields: Any) -> Step:
    return Step(id=id, order=order, language=fields.pop("language", "python"), status=status, code="x", **fields)


def texts(steps: list[Step], **kwargs: Any) -> list[str]:
    return [finding.text for finding in key_findings(steps, **kwargs)]


def test_failed_steps_give_no_finding() -> None:
    steps = [step("a", 0, stdout="kept"), step("b", 1, status="failed", stdout="partial output", result={"x": 1})]
    assert texts(steps) == ["kept"]


def test_a_later_correction_with_the_same_label_supersedes_and_is_kept() -> None:
    steps = [
        step("a", 0, label="fit", result={"r2": 0.5}),
        step("b", 1, label="other", stdout="other output"),
        step("c", 2, label="fit", result={"r2": 0.9}),
    ]
    assert texts(steps) == ["other: other output", "fit: r2: 0.9"]  # in the order of the analysis


def test_a_rerun_of_the_same_save_as_dataset_supersedes() -> None:
    steps = [
        step("a", 0, save_as="clean", stdout="rows kept: 90"),
        step("b", 1, save_as="clean", stdout="rows kept: 95"),
    ]
    assert texts(steps) == ["rows kept: 95"]


def test_retry_of_supersedes_the_step_it_names() -> None:
    steps = [step("a", 0, stdout="x = 1"), step("b", 1, stdout="y = 3"), step("c", 2, retry_of="a", stdout="x = 2")]
    assert texts(steps) == ["y = 3", "x = 2"]


def test_a_retry_of_a_failed_step_is_kept() -> None:
    steps = [step("a", 0, status="failed", stderr="boom"), step("b", 1, retry_of="a", stdout="fixed result")]
    assert texts(steps) == ["fixed result"]


def test_rolled_back_steps_give_nothing_and_supersede_nothing() -> None:
    steps = [
        step("a", 0, label="fit", stdout="r2 = 0.8"),
        step("b", 1, label="fit", rolled_back=True, stdout="r2 = 0.1"),
        step("c", 2, rolled_back=True, stdout="undone"),
    ]
    assert texts(steps) == ["fit: r2 = 0.8"]


def test_a_failed_correction_supersedes_nothing() -> None:
    steps = [
        step("a", 0, label="fit", stdout="r2 = 0.8"),
        step("b", 1, label="fit", status="failed", stdout="r2 = 0.1"),
    ]
    assert texts(steps) == ["fit: r2 = 0.8"]


def test_relevant_steps_are_in_creation_order_whatever_the_input_order() -> None:
    steps = [step("c", 2), step("a", 0), step("b", 1, status="failed")]
    assert [s.id for s in relevant_steps(steps)] == ["a", "c"]


def test_analysis_order_and_label_prefix() -> None:
    steps = [step("a", 0, label="load", result={"rows": 100}), step("b", 1, result=3.14159265)]
    found = key_findings(steps)
    assert [f.text for f in found] == ["load: rows: 100", "x: 3.142"]  # the code "x" labels its value
    assert (found[0].step_id, found[0].label) == ("a", "load")
    assert found[1].label is None


def test_duplicates_are_dropped_by_normalised_text() -> None:
    steps = [step("a", 0, stdout="Mean:  5"), step("b", 1, stdout="mean: 5."), step("c", 2, stdout="median: 4")]
    assert texts(steps) == ["mean: 5.", "median: 4"]


def test_at_most_twelve_findings_and_limit() -> None:
    steps = [step(f"s{i}", i, stdout=f"value {i}") for i in range(20)]
    assert texts(steps) == [f"value {i}" for i in range(8, 20)]  # the newest twelve, in analysis order
    assert len(texts(steps, limit=3)) == 3


def test_a_step_that_said_nothing_gives_no_finding() -> None:
    assert key_findings([step("a", 0, stdout="FutureWarning: x\n\n", result=None)]) == []


def test_result_and_stdout_together_without_repeating() -> None:
    steps = [step("a", 0, result={"mean": 5, "n": 10}, stdout="n: 10\nthe mean is stable\n")]
    assert texts(steps) == ["mean: 5; n: 10\nthe mean is stable"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"mean": 1.23456789, "ok": True, "missing": None}, "mean: 1.235; ok: true; missing: —"),
        ([1, 2, 3], "1, 2, 3"),
        (list(range(15)), "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, … (15)"),
        ({"by_region": {"north": 3, "south": 4}}, "by_region: (north: 3, south: 4)"),
        ("42 rows", "42 rows"),
        (7, "7"),
    ],
)
def test_result_values_render_readably(value: Any, expected: str) -> None:
    assert render_value(value) == expected


def test_paths_and_tool_names_never_reach_a_finding() -> None:
    steps = [
        step(
            "a",
            0,
            stdout="saved to /tmp/ws/sessions/s1/workspace/out.csv via run_code\n",
            result={"file": "C:\\Users\\me\\data.csv"},
        )
    ]
    assert texts(steps) == ["file: data.csv\nsaved to out.csv via Python"]


def test_business_text_keeps_urls_ratios_and_relative_names() -> None:
    text = "see https://example.com/a/b, ratio 3/4, km/h, charts/a.png"
    assert business_text(text) == text


NOISE = {
    "FutureWarning": "/opt/lib/pandas/core.py:12: FutureWarning: observed=False is deprecated\n  df.groupby('a')",
    "DeprecationWarning": "DeprecationWarning: np.float is a deprecated alias",
    "UserWarning": "/x/y.py:3: UserWarning: Glyph 38144 missing from font(s) DejaVu Sans.\n  fig.savefig('a.png')",
    "deprecation notice": "The default of observed=False is deprecated and will change",
    "warnings.warn": "  warnings.warn('old api')",
    "R warning message": "Warning message:\nIn log(-1) : NaNs produced",
    "R warning in": "Warning in sqrt(-1) : NaNs produced",
    "Python traceback": (
        'Traceback (most recent call last):\n  File "<cell>", line 1, in <module>\n    1/0\n'
        "ZeroDivisionError: division by zero"
    ),
    "IPython traceback": (
        "\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\n"
        "\x1b[0;31mKeyError\x1b[0m                                  Traceback (most recent call last)\n"
        "Cell In[3], line 1\n----> 1 df['nope']\n\nKeyError: 'nope'"
    ),
    "R error": "Error in lm(y ~ x) : object 'y' not found\nCalls: lm -> eval\nExecution halted",
    "tqdm progress bar": " 45%|████▌     | 45/100 [00:01<00:02, 30.00it/s]",
    "bracket progress bar": "[=====>          ] 35% ETA: 3s",
    "carriage-return updates": "loading 1/3\rloading 2/3\rloading 3/3",
    "pip install log": (
        "Collecting seaborn\n  Downloading seaborn-0.13.2-py3-none-any.whl (294 kB)\n"
        "Requirement already satisfied: numpy in ./lib\nInstalling collected packages: seaborn\n"
        "Successfully installed seaborn-0.13.2"
    ),
    "R install log": (
        "trying URL 'https://cran.r-project.org/src/contrib/glue_1.7.0.tar.gz'\n"
        "Content type 'application/x-gzip' length 105420 bytes\n==================================================\n"
        "* installing *source* package 'glue' ...\n** libs\n* DONE (glue)"
    ),
    "ANSI escapes": "\x1b[1m\x1b[32m\x1b[0m",
    "kaleido": "Kaleido subprocess failed to start; choosing fallback",
    "Chromium": "Chromium not found, downloading a headless shell",
    "DevTools": "DevTools listening on ws://127.0.0.1:9222/devtools/browser/abc",
    "Chromium log line": "[0101/120000.123456:ERROR:gpu_init.cc(523)] Passthrough is not supported",
    "TimeoutError": "TimeoutError: waited 30 s for the kernel",
    "timed out": "Request timed out after 30 seconds",
    "Timeout": "Timeout while waiting for image export",
    "log record": "INFO:matplotlib.font_manager:generated new fontManager",
}


@pytest.mark.parametrize("noise", NOISE.values(), ids=NOISE.keys())
def test_each_kind_of_noise_is_filtered(noise: str) -> None:
    assert clean_output(f"{noise}\n{MEANINGFUL}\n") == MEANINGFUL
    assert clean_output(f"{MEANINGFUL}\n{noise}") == MEANINGFUL


@pytest.mark.parametrize("prefix", ["[stdout] ", "[stderr] ", "stdout: ", "stderr: ", "STDOUT:"])
def test_stream_prefixes_are_removed_and_the_rest_kept(prefix: str) -> None:
    assert clean_output(f"{prefix}{MEANINGFUL}\n{prefix}\n") == MEANINGFUL


def test_ansi_codes_are_stripped_from_kept_lines() -> None:
    assert clean_output("\x1b[31mmean revenue: 42\x1b[0m\r\n") == MEANINGFUL


def test_meaningful_lines_survive() -> None:
    text = "[1] 5.5\n各地区平均收入：42\nEarly warning signs in 3 regions\n\n-----\nRegion  Revenue\nNorth   12"
    assert clean_output(text).splitlines() == [
        "[1] 5.5",
        "各地区平均收入：42",
        "Early warning signs in 3 regions",
        "Region  Revenue",
        "North   12",
    ]


def test_a_finding_from_noisy_output_keeps_only_the_result() -> None:
    noisy = "\n".join(NOISE.values())
    assert texts([step("a", 0, label="revenue", stdout=f"{noisy}\n{MEANINGFUL}\n{noisy}")]) == [
        f"revenue: {MEANINGFUL}"
    ]
