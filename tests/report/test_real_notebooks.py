"""``nini report NOTEBOOK --lang en`` on real public notebooks (tests/report/fixtures/, see its README).

Every expectation here was written by hand from reading the notebook: its title, the results an
analyst would sign (with their cell, N being the cell's 1-based position among all cells), the
noise that must not be a finding, its charts and captions, the cells that failed or never ran,
and its conclusions. None was copied from what nini printed. Each notebook's report is written
once per module through the CLI's entry point (typer's runner, in process) and read back as
Markdown and HTML.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nini.cli import app

FIXTURES = Path(__file__).parent / "fixtures"
HOML2 = "handson-ml3/02_end_to_end_machine_learning_project.ipynb"
HOML8 = "handson-ml3/08_dimensionality_reduction.ipynb"
RASBT2 = "machine-learning-book/ch02.ipynb"
TIPS = "pandas_exercises/Solutions.ipynb"
IR_DEMO = "IRkernel/Demo.ipynb"
IR_SUM = "jupytext/ir_notebook.ipynb"
PLOTLY = "jupytext/plotly_graphs.ipynb"
R_MAGIC = "jupytext/Notebook_with_R_magic.ipynb"
ALTAIR = "visualization-curriculum/altair_debugging.ipynb"
BAYES = "Bayesian-Methods-for-Hackers/Ch1_Introduction_PyMC_current.ipynb"
ALL = [HOML2, HOML8, RASBT2, TIPS, IR_DEMO, IR_SUM, PLOTLY, R_MAGIC, ALTAIR, BAYES]

NO_CONCLUSION = "The notebook states no conclusion."
PARTIAL = re.compile(r"(\d+) of (\d+) cells failed; results are partial")
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?%?")
REMOTE = re.compile(r"cdn\.plot\.ly|cdn\.jsdelivr\.net|unpkg\.com|<script[^>]+src=[\"']?https?:", re.I)
PREVIEW = re.compile(r"<img[^>]+src=[\"']data:image/(?:png|svg\+xml|jpeg|webp)|<svg\b", re.I)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
NEEDS_PLOTLY_RENDERER = pytest.mark.skipif(
    CHROMIUM is None or find_spec("kaleido") is None,
    reason="Plotly previews need kaleido and a Chromium (make test installs both)",
)
NEEDS_VL_CONVERT = pytest.mark.skipif(
    find_spec("vl_convert") is None, reason="Vega-Lite previews need vl-convert-python (the charts extra)"
)


@dataclass(frozen=True)
class Figure:
    caption: str  # without the "(cell N)" the heading ends with
    link: str  # the preview's file, relative to the report; "" for an entry without an image
    cell: int | None  # the cell the heading names


@dataclass
class Report:
    """One notebook's written report: its Markdown split at ``## `` headings, and its HTML."""

    notebook: Path
    md_path: Path
    html_path: Path
    md: str
    html: str

    @property
    def title(self) -> str:
        first = self.md.splitlines()[0]
        assert first.startswith("# "), first
        return first[2:].strip()

    def section(self, heading: str) -> str:
        parts = re.split(r"^## ", self.md, flags=re.M)
        found = [p.split("\n", 1)[1] for p in parts[1:] if p.split("\n", 1)[0].strip() == heading]
        assert len(found) == 1, f"no single '## {heading}' in the report:\n{self.md[:2000]}"
        return found[0]

    def html_section(self, heading: str) -> str:
        parts = re.split(r"<h2[^>]*>", self.html)
        found = [p for p in parts[1:] if re.sub(r"<[^>]+>", "", p.split("</h2>", 1)[0]).strip() == heading]
        assert len(found) == 1, f"no single <h2>{heading}</h2> in the HTML"
        return found[0]

    @property
    def findings(self) -> list[str]:
        """The items of Key findings: a top-level ``- `` line with its continuation (a table, more lines)."""
        return [item for item in re.split(r"\n(?=- )", "\n" + self.section("Key findings")) if item.startswith("- ")]

    def findings_of(self, cell: int) -> list[str]:
        return [item for item in self.findings if re.search(rf"\bcell {cell}\b", item, re.I)]

    @property
    def figures(self) -> list[Figure]:
        """Each ``### Figure N: caption (cell C)`` of Charts, in order, with its image link if it has one."""
        out = []
        for block in re.split(r"^### ", self.section("Charts"), flags=re.M)[1:]:
            head = block.split("\n", 1)[0]
            if match := re.match(r"Figure \d+[:.]\s*(.*)", head):
                cell = re.search(r"\s*\((?:[^()]*\b)?cell (\d+)\)\s*$", match.group(1), re.I)
                caption = match.group(1)[: cell.start()] if cell else match.group(1)
                link = re.search(r"!\[[^\]]*\]\(([^)]+)\)", block)
                out.append(Figure(caption.strip(), link.group(1) if link else "", int(cell.group(1)) if cell else None))
        return out

    @property
    def captions(self) -> list[str]:
        return [figure.caption for figure in self.figures]


def has_number(text: str, value: float, rel: float = 1e-3) -> bool:
    """``value`` is written in ``text``, however rounded to 4 significant digits, with thousands
    separators, or as a percentage (0.9705 as 97.05%)."""
    for match in NUMBER.findall(text):
        raw = match.rstrip("%").replace(",", "")
        try:
            number = float(raw)
        except ValueError:
            continue
        for candidate in (number, number / 100) if match.endswith("%") else (number,):
            if abs(candidate - value) <= rel * abs(value):
                return True
    return False


def is_image(path: Path) -> bool:
    """A PNG or an SVG file: a static preview, not a page that needs scripts."""
    head = path.read_bytes()[:4096]
    return head.startswith(b"\x89PNG\r\n\x1a\n") or (path.suffix == ".svg" and b"<svg" in head)


def assert_no_finding_from(r: Report, *cells: int) -> None:
    for cell in cells:
        assert not r.findings_of(cell), (cell, r.findings_of(cell))


def assert_image_previews(r: Report) -> None:
    for figure in r.figures:
        assert figure.link and is_image(r.md_path.parent / figure.link), figure
    assert len(PREVIEW.findall(r.html_section("Charts"))) >= len(r.figures)


def cells_of(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


def write_report(
    root: Path, notebook: Path, *options: str, lang: str | None = "en", env: dict[str, str] | None = None
) -> tuple[Report, str]:
    """``nini report NOTEBOOK --lang LANG --out ROOT/out [options]`` with NINI_HOME and the project in
    ``root`` (and ``env``, ``NINI_*`` settings); the report and what the command said (stdout and stderr)."""
    (root / "project").mkdir(parents=True, exist_ok=True)
    with pytest.MonkeyPatch.context() as patch:
        for key in [k for k in os.environ if k.startswith("NINI_")]:
            patch.delenv(key)
        for key, value in {"NINI_HOME": str(root / "home"), **(env or {})}.items():
            patch.setenv(key, value)
        language = ["--lang", lang] if lang else []
        result = CliRunner().invoke(
            app,
            [
                "--project-dir",
                str(root / "project"),
                "report",
                str(notebook),
                *language,
                "--out",
                str(root / "out"),
                *options,
            ],
        )
    assert result.exit_code == 0, (notebook.name, result.output, result.exception)
    assert "Traceback" not in result.output
    paths = [Path(line) for line in result.stdout.splitlines() if line.strip()]
    md, html = (next(p for p in paths if p.suffix == suffix) for suffix in (".md", ".html"))
    return Report(notebook, md, html, md.read_text(encoding="utf-8"), html.read_text(encoding="utf-8")), result.output


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Report]]:
    """``report(name)``: the fixture notebook's report from its saved outputs, written once per module."""
    written: dict[str, Report] = {}
    logger = logging.getLogger("nini")
    handlers, level = list(logger.handlers), logger.level

    def make(name: str) -> Report:
        if name not in written:
            written[name] = write_report(tmp_path_factory.mktemp(Path(name).stem), FIXTURES / name)[0]
        return written[name]

    yield make
    for handler in [h for h in logger.handlers if h not in handlers]:
        logger.removeHandler(handler)
        handler.close()
    logger.setLevel(level)


# -- every notebook --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ALL)
def test_each_finding_names_a_cell_that_ran_and_links_to_it(report, name: str) -> None:
    """A finding is traceable: it names its cell (``cell 12``), a code cell that ran without an
    error, and the HTML links that name."""
    r = report(name)
    cells = cells_of(r.notebook)
    for item in r.findings:
        named = [int(n) for n in re.findall(r"\bcell (\d+)\b", item, re.I)]
        assert named, f"a finding that names no cell: {item!r}"
        for number in named:
            cell = cells[number - 1]
            assert cell["cell_type"] == "code" and cell.get("execution_count") is not None, (number, item)
            assert not any(o["output_type"] == "error" for o in cell["outputs"]), f"cell {number} failed: {item!r}"
        found = r.html_section("Key findings")
        for number in named:
            link = re.search(rf"<a\b[^>]*href=\"([^\"]*)\"[^>]*>[^<]*\bcell {number}\b", found, re.I)
            assert link, f"no link to cell {number}"
            if link.group(1).startswith("#"):  # a link within the page: to the cell's code, which is there
                assert f'id="{link.group(1)[1:]}"' in r.html, link.group(0)


# The cells whose outputs are the notebook's charts, one entry per chart, read from each notebook.
CHART_CELLS = {
    HOML2: [52, 54],
    HOML8: [],
    RASBT2: [27, 30, 34, 42, 47, 47, 51, 51],
    TIPS: [10, 12, 14, 16, 18, 20, 22, 24],
    IR_DEMO: [12],
    IR_SUM: [3],
    PLOTLY: [5, 5],
    R_MAGIC: [4, 6],
    ALTAIR: [14, 19],
    BAYES: [10, 12, 15, 17, 20, 30, 33],  # not 42, the book's CSS; not 28, PyMC's progress bars
}


@pytest.mark.parametrize("name", ALL)
def test_charts_are_the_cells_that_drew_them_and_name_them(report, name: str) -> None:
    """Loader scripts and styling are not charts, empty-source cells' charts are kept, a failed
    cell's are not; each figure names its cell, its caption is never a file slug."""
    r = report(name)
    assert [figure.cell for figure in r.figures] == CHART_CELLS[name], r.section("Charts")
    for caption in r.captions:
        assert caption and not re.fullmatch(r"cell-[\d-]+|[a-z0-9]+(?:-[a-z0-9]+){3,}", caption), caption


@pytest.mark.parametrize("name", ALL)
def test_previews_are_files_readable_like_the_report_and_nothing_loads_from_a_cdn(report, name: str) -> None:
    r = report(name)
    mode = r.md_path.stat().st_mode & 0o777
    for figure in r.figures:
        if name not in (PLOTLY, ALTAIR):  # these two need a renderer (their own tests below)
            assert figure.link, figure
        if figure.link:
            file = r.md_path.parent / figure.link
            assert not Path(figure.link).is_absolute() and is_image(file), figure
            assert file.stat().st_mode & 0o777 == mode, (figure, oct(file.stat().st_mode), oct(mode))
    assert len(PREVIEW.findall(r.html_section("Charts"))) >= len([f for f in r.figures if f.link])
    assert not REMOTE.search(r.html)
    for file in r.md_path.parent.rglob("*"):
        if file.suffix in {".html", ".htm", ".js"}:
            assert not REMOTE.search(file.read_text(encoding="utf-8", errors="replace")), file.name


@pytest.mark.parametrize("name", ALL)
def test_no_host_path_and_no_html_in_methods(report, name: str) -> None:
    r = report(name)
    assert str(FIXTURES) not in r.md and str(r.md_path.parent) not in r.md
    assert not re.search(r"<(?:table|td|a|img|br|div|span)\b", r.section("Methods"), re.I), r.section("Methods")


@pytest.mark.parametrize("name", [IR_DEMO, IR_SUM, ALTAIR])  # one main result each
def test_one_result_is_said_in_the_singular(report, name: str) -> None:
    assert not re.search(r"\b1 (?:main )?results\b|\b1 charts\b", report(name).md), report(name).section("Summary")


@pytest.mark.parametrize("name", [HOML2, HOML8, RASBT2, TIPS, IR_SUM, PLOTLY, R_MAGIC, BAYES])
def test_a_notebook_where_nothing_failed_is_not_called_partial(report, name: str) -> None:
    """No saved error and no non-empty cell left unrun (an empty cell that never ran is no failure)."""
    summary = report(name).section("Summary")
    assert not PARTIAL.search(summary) and "failed" not in summary.lower(), summary


# -- handson-ml3, chapter 2: the headline is the test RMSE ------------------------------------------


def test_homl2_title_is_the_file_name_when_no_heading_comes_before_code(report) -> None:
    # cell 1 is bold text, not a heading; the first heading, "Get the Data" (cell 9), follows code cells 4, 6, 8
    # (a first cell that is only a bold line, "Chapter 2 – End-to-end Machine Learning project", stands
    # for a heading as well: either is a title an analyst would sign, a section's heading is not)
    title = report(HOML2).title
    assert title.replace("_", " ").lower() in (
        "02 end to end machine learning project",
        "chapter 2 – end-to-end machine learning project",
    ), title


def test_homl2_the_test_rmse_its_interval_and_the_model_comparison_are_findings(report) -> None:
    r = report(HOML2)
    assert any(has_number(item, 41424.40026462184) for item in r.findings_of(59)), r.findings
    interval = r.findings_of(62)  # `rmse_lower, rmse_upper` of the bootstrap in cell 61
    assert any(has_number(i, 39574.03054635233) and has_number(i, 43779.833703193224) for i in interval), r.findings
    # the cross-validated RMSEs of the tree, the linear model and the forest (cells 25, 26, 29),
    # and the grid and randomized searches' tables (cells 43, 49)
    compared = {25: 66868.027288, 26: 69858.018195, 29: 47019.561281, 43: 44042, 49: 42021}
    assert any(has_number(item, value) for cell, value in compared.items() for item in r.findings_of(cell)), r.findings


def test_homl2_summary_leads_with_the_test_rmse_not_an_exercise(report) -> None:
    summary = report(HOML2).section("Summary")
    assert has_number(summary, 41424.40026462184), summary
    headline = next(m.start() for m in NUMBER.finditer(summary) if has_number(m.group(), 41424.40026462184))
    for exercise in (69814.13889867254, 55853.88100300133, 106775.63787128967):  # cells 75, 84, 115
        later = [m.start() for m in NUMBER.finditer(summary) if has_number(m.group(), exercise)]
        assert all(at > headline for at in later), (exercise, summary)


def test_homl2_noise_is_not_a_finding(report) -> None:
    r = report(HOML2)
    findings = "\n".join(r.findings)
    for noise in (
        "my_california_housing_model.pkl",
        "array(",
        "Pipeline(",
        "GridSearchCV(",
        "RandomizedSearchCV(",
        "Welcome to Machine Learning",
    ):
        assert noise not in findings, noise
    assert_no_finding_from(r, 15, 17, 56, 68, 65)  # numpy arrays, and joblib.dump's file list (65)


def test_homl2_captions_and_conclusion(report) -> None:
    r = report(HOML2)  # cells 52 and 54 set no title: the heading above them
    assert r.captions and all(c.startswith("Randomized Search") for c in r.captions), r.captions
    assert NO_CONCLUSION in r.section("Conclusions and recommendations")


# -- handson-ml3, chapter 8: accuracies, not %time ---------------------------------------------------


def test_homl8_accuracies_are_findings_and_timings_are_not(report) -> None:
    r = report(HOML8)
    # "# Setup" (cell 4) is the first heading before code, but a chore heading is no title; the opening
    # bold line (cell 1) stands for the notebook's heading, else the file name
    assert r.title.replace("_", " ").lower() in ("chapter 8 – dimensionality reduction", "08 dimensionality reduction")
    for cell, accuracy in {23: 0.9705, 30: 0.9481, 34: 0.874, 38: 0.8959}.items():
        assert any(has_number(item, accuracy, rel=1e-4) for item in r.findings_of(cell)), (cell, r.findings)
    assert_no_finding_from(r, 22, 27, 33, 36)  # `%time model.fit(...)`: CPU and wall times, the model's repr
    assert "CPU times" not in r.md and "Wall time" not in r.md
    assert "RandomForestClassifier(random_state=42)" not in "\n".join(r.findings)


# -- rasbt's machine-learning-book, chapter 2 --------------------------------------------------------


def test_rasbt_title_versions_and_nbconvert_are_not_findings(report) -> None:
    r = report(RASBT2)
    assert r.title.startswith("Machine Learning with PyTorch and Scikit-Learn"), r.title
    body = r.section("Summary") + r.section("Key findings")
    for noise in ("[OK]", "Your Python version", "NbConvertApp", "AdalineSGD at 0x", "From URL"):
        assert noise not in body, noise
    assert_no_finding_from(r, 6, 52, 57)  # check_packages, an object's repr, the nbconvert command


def test_rasbt_captions_come_from_the_chart_titles_and_headings(report) -> None:
    captions = report(RASBT2).captions  # cells 27, 30, 34, 42, 47 (two), 51 (two)
    assert captions[0].startswith("Plotting the Iris data"), captions  # cell 27: no title, its heading
    assert any("Adaline - Learning rate" in c for c in captions), captions  # cell 42: ax[0].set_title
    assert any("Adaline - Gradient descent" in c for c in captions), captions  # cell 47: plt.title
    assert any("Adaline - Stochastic gradient descent" in c for c in captions), captions  # cell 51


def test_rasbt_conclusion_is_not_the_package_check(report) -> None:
    # "# Summary" (cell 54) holds only "..." and "Readers may ignore the following cell"
    conclusions = report(RASBT2).section("Conclusions and recommendations")
    assert "Check recommended package versions" not in conclusions and "Readers may ignore" not in conclusions
    assert NO_CONCLUSION in conclusions, conclusions


# -- pandas_exercises: every solution cell has empty source -----------------------------------------


def test_tips_charts_of_empty_source_cells_are_kept(report) -> None:
    r = report(TIPS)
    assert r.title == "Tips"
    captions = r.captions  # cells 10, 12, ..., 24: each under its "### Step N." heading
    assert "Plot the total_bill column histogram" in captions[0], captions
    assert "relationship between days and total_bill" in captions[3], captions
    assert_image_previews(r)


def test_tips_tables_of_empty_source_cells_are_kept_and_reprs_are_not(report) -> None:
    r = report(TIPS)
    tables = r.findings_of(6) + r.findings_of(8)  # the tips data before and after dropping "Unnamed: 0"
    header = re.compile(r"^\s*\|.*\btotal_bill\b.*\|.*\bsmoker\b", re.M)  # a table that kept its header row
    assert any(header.search(item) for item in tables), r.findings
    for noise in ("JointGrid", "PairGrid", "matplotlib.figure.Figure", " at 0x"):
        assert noise not in r.md, noise
    assert NO_CONCLUSION in r.section("Conclusions and recommendations")


# -- R: IRkernel's display_data, and R magics ------------------------------------------------------


def test_an_r_value_is_a_finding(report) -> None:
    r = report(IR_SUM)  # cell 2: sum(1:10), shown by IRkernel as display_data "[1] 55"
    assert r.title.replace("_", " ").lower() == "ir notebook", r.title
    assert any(has_number(item, 55) for item in r.findings_of(2)), r.findings
    assert has_number(r.section("Summary"), 55)
    assert [caption.lower() for caption in r.captions] == ["cell 3"]  # plot(cars): no title, no heading above
    assert "Python" not in r.section("Methods") and re.search(r"\bR\b", r.section("Methods"))


def test_irkernel_demo_names_its_failed_cell(report) -> None:
    r = report(IR_DEMO)  # seven code cells; cell 10 calls throw(), which stop()s with 'deep error'
    summary = r.section("Summary")
    assert "1 of 7 cells failed; results are partial" in summary, summary
    assert re.search(r"\bcell 10\b", summary, re.I), summary
    assert "this line is run / displayed" not in "\n".join(r.findings)  # the failed cell's value
    assert not r.findings_of(7)  # print('Hello world! Love, R in Jupyter.'): a greeting, no result
    assert any(has_number(item, 12) for item in r.findings_of(5)), r.findings  # a + b: 12, 13, ..., 59
    assert "Python" not in r.section("Methods")


def test_r_magic_is_described_as_r(report) -> None:
    r = report(R_MAGIC)
    assert r.title == "A notebook with R cells"
    own = "".join("".join(c["source"]) for c in cells_of(r.notebook) if c["cell_type"] == "markdown")
    said = [line for line in r.section("Methods").splitlines() if line.strip() and line.strip() not in own]
    assert any(re.search(r"\bR\b", line) for line in said), said
    assert all(re.search(r"\bR\b", line) for line in said if "Python" in line), said


# -- Plotly and Altair -----------------------------------------------------------------------------


def test_plotly_loader_is_not_a_chart_and_captions_are_the_layout_title(report) -> None:
    r = report(PLOTLY)
    assert r.title == "Interactive plots"
    assert r.captions and all(c.startswith("bar plot") for c in r.captions), r.captions  # cell 5, twice


@NEEDS_PLOTLY_RENDERER
def test_plotly_preview_is_an_image(report) -> None:
    assert_image_previews(report(PLOTLY))


def test_altair_failures_are_named_in_the_summary(report) -> None:
    r = report(ALTAIR)  # ten code cells: 25 and 27 raised, 29 never ran
    assert r.title == "Altair Debugging Guide"
    summary = r.section("Summary")
    match = PARTIAL.search(summary)
    assert match and int(match.group(1)) in (2, 3) and int(match.group(2)) == 10, summary
    for cell in (25, 27, 29):
        assert re.search(rf"\bcell {cell}\b", summary, re.I), (cell, summary)


def test_altair_noise_is_not_a_finding(report) -> None:
    r = report(ALTAIR)
    findings = "\n".join(r.findings)
    assert "alt.Chart(...)" not in r.md
    for noise in ("6.0.0", "6.1.0", "command not found", "SchemaValidationError"):
        assert noise not in findings, noise
    assert_no_finding_from(r, 4, 8, 10)  # pip, alt.__version__, PyPI's latest version
    assert NO_CONCLUSION in r.section("Conclusions and recommendations")


@NEEDS_VL_CONVERT
def test_altair_charts_have_image_previews_and_their_headings(report) -> None:
    r = report(ALTAIR)  # cells 14 and 19 set no title: the headings above them
    assert [c.split(" (")[0] for c in r.captions] == ["Try Making a Chart", "Non Existent Fields"], r.captions
    assert_image_previews(r)


# -- Bayesian Methods for Hackers: setext headings, plt.title captions, PyMC's log, the book's CSS ----


def test_bayes_captions_are_the_plt_titles_and_styling_and_progress_are_not_charts(report) -> None:
    r = report(BAYES)
    assert r.title.startswith("Probabilistic Programming"), r.title  # a setext heading, "=====" under it
    assert r.captions[:2] == ["Are there bugs in my code?", "Prior and Posterior probability of bugs present"]
    starts = [
        "Probability mass function of a Poisson random variable",  # cell 15: a title continued by "\\"
        "Probability density function of an Exponential random variable",
        "Did the user's texting habits change over time?",
        "Posterior distributions of the variables",  # cell 30: a triple-quoted title over three lines
        "Expected number of text-messages received",
    ]
    assert len(r.captions) == 7 and all(c.startswith(s) for c, s in zip(r.captions[2:], starts, strict=False)), (
        r.captions
    )
    for noise in (
        "Multiprocess sampling",
        "Sampling 4 chains",
        "Metropolis",
        "<progress",
        "font-face",
        "Computer Modern",
    ):
        assert noise not in r.md, noise
    assert_no_finding_from(r, 28, 42)
    assert NO_CONCLUSION in r.section("Conclusions and recommendations")


def test_the_report_speaks_ui_language_unless_lang_says_otherwise(tmp_path: Path, nini_logger: logging.Logger) -> None:
    english, _ = write_report(tmp_path / "en", FIXTURES / IR_DEMO, lang=None, env={"NINI_UI__LANGUAGE": "en"})
    assert "1 of 7 cells failed; results are partial" in english.section("Summary")
    chinese, _ = write_report(tmp_path / "zh", FIXTURES / IR_DEMO, lang="zh", env={"NINI_UI__LANGUAGE": "en"})
    assert "## 分析摘要" in chinese.md and "## Summary" not in chinese.md
    summary = chinese.md.split("## 分析摘要\n", 1)[1].split("\n## ", 1)[0]
    assert "results are partial" not in summary and "failed" not in summary, summary
    assert re.search(r"[\u4e00-\u9fff]", summary) and has_number(summary, 7) and has_number(summary, 10), summary


# -- --execute: a missing kernel falls back to the saved outputs, a run names what failed --------------


def installed_kernels() -> set[str]:
    from jupyter_client.kernelspec import KernelSpecManager

    return set(KernelSpecManager().find_kernel_specs())


@pytest.mark.parametrize(("name", "kernel"), [(IR_DEMO, "ir"), (R_MAGIC, "python2"), (BAYES, "pymc_env")])
def test_execute_without_the_kernel_reports_the_saved_outputs(
    tmp_path: Path, nini_logger: logging.Logger, name: str, kernel: str
) -> None:
    if kernel in installed_kernels():
        pytest.skip(f"a {kernel} kernel is installed here: the notebook would run on it")
    notebook = Path(shutil.copy(FIXTURES / name, tmp_path))  # a run's cells write beside the notebook
    r, said = write_report(tmp_path, notebook, "--execute")
    assert re.search(rf"\b{kernel}\b", said), said  # says which kernel is missing
    assert [figure.cell for figure in r.figures] == CHART_CELLS[name]
    partial = PARTIAL.search(r.section("Summary"))  # Demo.ipynb's saved error in cell 10 still counts
    assert (partial and partial.group(0)) == ("1 of 7 cells failed; results are partial" if name == IR_DEMO else None)


@pytest.mark.slow
def test_execute_names_the_cells_that_failed_in_the_summary(tmp_path: Path, nini_logger: logging.Logger) -> None:
    """Chapter 8's exercise cells run without the MNIST data and models the cut chapter defined:
    cells 19, 21, 22, 23, 25, 27, 30, 33, 34, 36 and 38 fail whatever is installed; cell 8 (``import
    sklearn``) fails too where scikit-learn is missing. Cells 6, 10 and 12 run."""
    r, _ = write_report(tmp_path, Path(shutil.copy(FIXTURES / HOML8, tmp_path)), "--execute", "--timeout", "120")
    failing = ([] if find_spec("sklearn") else [8]) + [19, 21, 22, 23, 25, 27, 30, 33, 34, 36, 38]
    summary = r.section("Summary")
    assert f"{len(failing)} of 15 cells failed; results are partial" in summary, summary
    named = [cell for cell in failing if re.search(rf"\bcell {cell}\b", summary)]
    more = re.search(r"\band (\d+) more\b", summary)  # a long list may end "... and 2 more"
    assert named == failing[: len(named)] and len(named) + int(more.group(1) if more else 0) == len(failing), summary
    assert not any(has_number(item, 0.9705, rel=1e-4) for item in r.findings)  # the saved accuracy did not rerun
    assert "CPU times" not in r.md
