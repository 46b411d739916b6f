"""Setting up a model, guided, in a real `jupyter lab` with no provider and Debian's Chromium
(issue 33, item 8): the Chat says there is no model when it opens, before anything is asked, and
leads to the Models tab; a refused question leaves no session behind and reads as a plain sentence;
presets fill the form; the form refuses what the server would, beside each field and without a
request (the empty form used to PUT .../providers/ and get NOT_FOUND); the key variable's line says
whether the server has it set and how to set it; and a saved provider takes the card away."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import SET_KEY, Lab, ask, open_sidebar, screenshot, wait_idle, watched_page, widen_sidebar

pytestmark = pytest.mark.slow

FORM = ".nini-provider-form"


@pytest.fixture(scope="module")
def empty_lab(lab: Lab) -> Lab:
    """The shared lab (SET_KEY in its environment) with its one provider removed, as an administrator
    removes it over REST: its settings name no provider. The next module finds the provider back."""
    lab.nini("DELETE", "models/providers/local")
    assert lab.nini("GET", "models")["providers"] == []
    return lab


@pytest.fixture(scope="module")
def sent() -> list[tuple[str, str, str]]:
    """The requests the page made to /nini/api/models/... (saving, testing, a key variable's status)."""
    return []


@pytest.fixture(scope="module")
def page(browser: Any, empty_lab: Lab, sent: list[tuple[str, str, str]]) -> Iterator[Any]:
    with watched_page(browser, empty_lab) as opened:
        opened.on(
            "request",
            lambda r: sent.append((r.method, r.url, r.post_data or "")) if "/nini/api/models/" in r.url else None,
        )
        yield opened


def field(page: Any, name: str) -> str:
    return page.input_value(f'{FORM} [name="{name}"]')


def test_the_chat_says_there_is_no_model_before_anything_is_asked(page: Any, empty_lab: Lab) -> None:
    open_sidebar(page)
    widen_sidebar(page)
    page.wait_for_selector('.nini-no-model[data-state="none"]', state="visible")
    assert page.inner_text(".nini-no-model-title") == "No model is ready yet"
    assert page.inner_text(".nini-no-model-open") == "Set up a model"
    screenshot(page, "33d-no-model-card")

    ask(page, "How many rows?")
    page.wait_for_selector('.nini-request-error[data-code="NO_MODEL_AVAILABLE"]')
    assert page.inner_text(".nini-request-error .nini-error-sentence").startswith(
        "No language model is ready to answer:"
    )
    wait_idle(page)
    assert empty_lab.nini("GET", "sessions") == []  # the refused question made no session
    screenshot(page, "33d-no-model-refused")

    page.click(".nini-no-model-open")
    page.wait_for_selector(".nini-models .nini-presets", state="visible")


def test_presets_fill_the_form_and_say_whether_the_key_is_set(page: Any) -> None:
    page.click('.nini-preset[data-preset="ollama"]')
    assert (field(page, "name"), field(page, "kind"), field(page, "base_url"), field(page, "api_key_env")) == (
        "ollama",
        "openai",
        "http://localhost:11434/v1",
        "",
    )
    assert field(page, "model") == "" and page.get_attribute(f'{FORM} [name="model"]', "placeholder") == "qwen2.5:7b"
    assert page.inner_text(".nini-key-status").startswith("No key variable")

    page.click('.nini-preset[data-preset="deepseek"]')  # the preset's name follows; the user's own would stay
    assert (field(page, "name"), field(page, "base_url"), field(page, "model"), field(page, "api_key_env")) == (
        "deepseek",
        "https://api.deepseek.com",
        "deepseek-chat",
        "DEEPSEEK_API_KEY",
    )
    page.wait_for_selector('.nini-key-status[data-set="false"]')
    assert "DEEPSEEK_API_KEY is not set on the server" in page.inner_text(".nini-key-status")
    assert page.inner_text(".nini-key-status .nini-key-command") == "export DEEPSEEK_API_KEY=<your key>"
    screenshot(page, "33d-preset-deepseek")

    page.click('.nini-preset[data-preset="anthropic"]')
    assert (field(page, "kind"), field(page, "base_url")) == ("anthropic", "https://api.anthropic.com")
    page.click('.nini-preset[data-preset="dashscope"]')
    assert field(page, "base_url") == "https://dashscope.aliyuncs.com/compatible-mode/v1"

    page.fill(f'{FORM} [name="api_key_env"]', SET_KEY)
    page.press(f'{FORM} [name="api_key_env"]', "Tab")
    page.wait_for_selector('.nini-key-status[data-set="true"]')
    assert page.inner_text(".nini-key-status") == f"{SET_KEY} is set on the server (its value is never shown here)."
    assert "sk-guided" not in page.content()
    screenshot(page, "33d-key-set")


def test_the_form_refuses_a_bad_provider_before_sending_it(page: Any, empty_lab: Lab, sent: list[Any]) -> None:
    before = (empty_lab.home / "settings.json").read_bytes()
    for name in ("name", "base_url", "model", "api_key_env"):
        page.fill(f'{FORM} [name="{name}"]', "")
    sent.clear()
    page.click(".nini-provider-save")  # the empty form
    page.wait_for_selector(f'{FORM} [name="name"][aria-invalid="true"]')
    assert page.inner_text("#nini-provider-name-error") == "Give the provider a name, like ollama"
    assert page.is_visible("#nini-provider-model-error")
    assert page.evaluate("() => document.activeElement.name") == "name"

    page.fill(f'{FORM} [name="name"]', "bad name/x")
    page.fill(f'{FORM} [name="base_url"]', "localhost:11434")
    page.fill(f'{FORM} [name="model"]', "m")
    page.fill(
        f'{FORM} [name="api_key_env"]', "sk-abcdef0123456789abcdef"
    )  # a key pasted where its variable's name goes
    page.press(f'{FORM} [name="api_key_env"]', "Tab")
    page.click(".nini-provider-save")
    for name in ("name", "base_url", "api_key_env"):
        page.wait_for_selector(f'{FORM} [name="{name}"][aria-invalid="true"]')
    assert page.get_attribute(f'{FORM} [name="model"]', "aria-invalid") == "false"
    assert "not the key itself" in page.inner_text("#nini-provider-api_key_env-error")
    screenshot(page, "33d-validation")
    assert sent == []  # nothing reached the server: no PUT .../providers/, no pasted key in a request
    assert (empty_lab.home / "settings.json").read_bytes() == before


def test_a_saved_provider_takes_the_card_away_and_the_chat_answers(page: Any, empty_lab: Lab, llm: ScriptedLLM) -> None:
    page.click('.nini-preset[data-preset="ollama"]')
    page.fill(f'{FORM} [name="name"]', "local")
    page.fill(f'{FORM} [name="base_url"]', llm.base_url)  # the scripted model stands in for Ollama
    page.fill(f'{FORM} [name="model"]', "m")
    page.click(".nini-provider-save")
    page.wait_for_selector('.nini-provider[data-name="local"][data-usable="true"]')
    page.click('#nini-panel .lm-TabBar-tab:has-text("Chat")')
    page.wait_for_selector(".nini-no-model", state="hidden")
    llm.reply(text("There are 144 rows."))
    ask(page, "How many rows now?")
    page.wait_for_selector(".nini-end .nini-feedback")
    [session] = empty_lab.nini("GET", "sessions")
    assert session["title"] == "How many rows now?"
