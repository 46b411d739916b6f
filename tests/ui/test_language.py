"""One language (issue 33, item 9), in a real `jupyter lab` driven by Chromium with the scripted model.

Two labs, both with JupyterLab in Chinese (the zh-CN language pack, JupyterLab's ``locale: zh_CN``): one
with ``ui.language`` auto, which follows JupyterLab, one with ``ui.language`` en, which overrides it. In
each, the same turn (an R step the policy refuses, then the answer) and the preferences preview: in
English no Chinese character anywhere in the sidebar (text, labels, placeholders, tooltips), in
Chinese no English label (tab captions, buttons, headings, status words, form labels, tooltips),
and the server's words (the refusal, the preview) in the sidebar's language. A report generated from
the Reports tab opens in a tab of the main area, in an iframe sandboxed without allow-scripts, in the
language the tab's select chose.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest

from nini.config import load_settings
from nini.skills.builtin.run_r import r_status
from tests.llm_server import ScriptedLLM, text, tool_call
from tests.ui.conftest import Lab, ask, open_sidebar, screenshot, wait_idle, watched_page, widen_sidebar

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not r_status(load_settings())[0], reason="the turn's refusal is R's"),
]

TABS = ("chat", "skills", "reports", "experience", "preferences", "models")
QUESTION = {"zh": "列出工作区的文件", "en": "List the workspace's files"}
ANSWER = {"zh": "R 的策略拒绝了列出文件。", "en": "R's policy refused to list the files."}
REFUSAL = {"zh": "不允许调用函数: system (第 1 行)", "en": "function not allowed: system (line 1)"}
PREVIEW = {"zh": "- 规则: 语气正式", "en": "- Rule: a formal tone"}
CJK = r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"
# What the sidebar shows as it was written, not in its language: a skill's description (nini's bundled
# skills are described in Chinese in their SKILL.md)
DATA = ".nini-skill-description"
# Chinese characters anywhere in the panel but its data: its text, and the labels, tooltips and placeholders
CHINESE_ON_SCREEN = """root => {
  root = root.cloneNode(true);
  for (const data of root.querySelectorAll(%s)) { data.remove(); }
  const texts = [root.textContent];
  for (const node of root.querySelectorAll('*')) {
    for (const name of ['aria-label', 'title', 'placeholder']) { if (node.getAttribute(name)) texts.push(node.getAttribute(name)); }
  }
  return texts.filter(text => /%s/.test(text)).map(text => text.match(/.{0,40}%s.{0,40}/s)[0]);
}""" % (json.dumps(DATA), CJK, CJK)  # noqa: UP031 - in a format string every brace of the JavaScript would be doubled
# Names and formats that read the same in both languages
SAME_IN_BOTH = r"\b(nini|Python|R|Markdown|SKILL\.md|HTML|MD|IPYNB|PDF|PNG|SVG|JSON|CSV|OpenAI|Anthropic|DeepSeek|Qwen|DashScope|Ollama|vLLM|LM Studio|OK|URL|API)\b"
# What the sidebar labels (tab captions, buttons, headings, status words, form labels, tooltips) that has
# English words and no Chinese character; data (session titles, skill names, code) is not a label
ENGLISH_LABELS = """root => {
  const found = [];
  const check = (where, text) => {
    text = (text || '').trim();
    if (text && !/%s/.test(text) && /[A-Za-z]{2,}/.test(text.replace(/%s/g, ''))) found.push(where + ': ' + text.slice(0, 80));
  };
  const labels = '.lm-TabBar-tab, button, h2, h3, h4, summary, label, legend, dt, [role=status], .nini-step-status, ' +
                 'option:not(.nini-sessions option)';
  for (const node of root.querySelectorAll(labels)) { check(node.tagName.toLowerCase(), node.textContent); }
  for (const node of root.querySelectorAll('[aria-label], [title]')) {
    for (const name of ['aria-label', 'title']) { check(name, node.getAttribute(name)); }
  }
  for (const node of root.querySelectorAll('[placeholder]')) {  // an example value (ollama, DEEPSEEK_API_KEY) is no label
    const example = /^([a-z0-9_.:\\/@-]+|[A-Z0-9_]+)$/.test(node.getAttribute('placeholder'));
    if (!example) { check('placeholder', node.getAttribute('placeholder')); }
  }
  return found;
}""" % (CJK, SAME_IN_BOTH)  # noqa: UP031 - as above


def chinese_jupyterlab(lab: Lab) -> None:
    """JupyterLab's own language setting, as its Settings editor writes it (read when a page loads)."""
    folder = lab.root / "lab-settings" / "@jupyterlab" / "translation-extension"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "plugin.jupyterlab-settings").write_text(json.dumps({"locale": "zh_CN"}))


@pytest.fixture(scope="module")
def labs(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM, lab: Lab
) -> Iterator[dict[str, Lab]]:
    """Both labs: ``zh`` follows JupyterLab (auto: the shared lab's default), ``en`` forces English over
    it (a setting of its own, so a lab of its own, started first to come up while the other is set)."""
    english = Lab(tmp_path_factory.mktemp("lab-en"), llm, settings={"ui": {"language": "en"}}, wait=False)
    started = {"zh": lab, "en": english}
    try:
        for each in started.values():
            chinese_jupyterlab(each)
            each.wait()
            each.nini("POST", "preferences", {"key": "tone", "value": "formal"})  # a rule the preview shows
        yield started
    finally:
        english.stop()


@pytest.fixture(scope="module")
def pages(browser: Any, labs: dict[str, Lab]) -> Iterator[dict[str, Any]]:
    with ExitStack() as stack:
        yield {language: stack.enter_context(watched_page(browser, lab)) for language, lab in labs.items()}


def show_tab(page: Any, name: str) -> None:
    """Click the sidebar tab of view ``name`` (found by the view, whatever its caption says)."""
    tab = page.get_attribute(f"#nini-tab-{name}", "aria-labelledby")
    page.click(f'#nini-panel [id="{tab}"]')
    page.wait_for_selector(f"#nini-tab-{name}", state="visible")


def contains(page: Any, selector: str, words: str, timeout_ms: float | None = None) -> None:
    page.wait_for_function(
        "([s, w]) => (document.querySelector(s)?.textContent ?? '').includes(w)",
        arg=[selector, words],
        timeout=timeout_ms,
    )


@pytest.mark.parametrize("language", ["zh", "en"])
def test_the_same_turn_and_preview_show_one_language(pages: dict[str, Any], llm: ScriptedLLM, language: str) -> None:
    page = pages[language]
    open_sidebar(page)
    widen_sidebar(page)
    llm.reply(tool_call("run_r_code", code='system("ls")', label="files"), text(ANSWER[language]))
    ask(page, QUESTION[language])
    contains(page, "#nini-panel .nini-chat", ANSWER[language])
    wait_idle(page)
    contains(page, "#nini-panel .nini-chat", REFUSAL[language])
    screenshot(page, f"33e-{language}-turn")
    for tab in TABS:  # every view drawn once, so each one's words are on the page
        show_tab(page, tab)
    contains(page, "#nini-panel .nini-prefs-preview", PREVIEW[language])
    screenshot(page, f"33e-{language}-preferences")
    show_tab(page, "reports")
    assert page.input_value(".nini-report-lang") == language  # a report is written in the sidebar's language
    screenshot(page, f"33e-{language}-reports")
    panel = page.locator("#nini-panel")
    other_language = panel.evaluate(CHINESE_ON_SCREEN if language == "en" else ENGLISH_LABELS)
    assert not other_language, "\n".join(other_language)


def test_a_report_opens_in_a_sandboxed_main_area_tab_in_the_chosen_language(pages: dict[str, Any]) -> None:
    page = pages["zh"]  # after the turn above: its session is the chat's
    show_tab(page, "reports")
    page.click(".nini-generate-report")
    frames = page.locator("#jp-main-dock-panel .nini-report-tab iframe.nini-report-frame")
    frames.first.wait_for(state="visible")
    page.frame_locator("#jp-main-dock-panel iframe.nini-report-frame >> nth=0").locator("h2").first.wait_for()
    chinese = page.frame_locator("#jp-main-dock-panel iframe.nini-report-frame >> nth=0").locator("main").inner_text()
    assert "关键发现" in chinese and "Key findings" not in chinese
    screenshot(page, "33e-report-tab-zh")

    page.select_option(".nini-report-lang", "en")
    page.click(".nini-generate-report")
    frames.nth(1).wait_for(state="visible")
    english = page.frame_locator("#jp-main-dock-panel iframe.nini-report-frame >> nth=1").locator("main")
    english.locator("h2").first.wait_for()
    assert "Key findings" in english.inner_text() and "关键发现" not in english.inner_text()
    for n in range(2):  # no exception to the sandbox: no scripts, no same origin, no forms
        assert frames.nth(n).get_attribute("sandbox") == ""
    assert page.locator("#nini-panel iframe").count() == 0  # not inside the sidebar any more
    screenshot(page, "33e-report-tab-en")
