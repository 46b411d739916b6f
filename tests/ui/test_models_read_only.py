"""The Models tab for a user who is not an administrator (issue 31, item 4): a real `jupyter lab`
whose identity provider names the browser's user bob, and Debian's Chromium. The providers are
shown read-only (no form, no Edit), each can still be tested as configured, and the server
refuses bob's change; the token-login lab of test_sidebar.py is the control, where the form is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.llm_server import ScriptedLLM, text
from tests.ui.conftest import Lab, open_sidebar, screenshot, watched_page, widen_sidebar

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def named_lab(browser: Any, tmp_path_factory: pytest.TempPathFactory, llm: ScriptedLLM) -> Iterator[Lab]:
    root = tmp_path_factory.mktemp("named-lab")
    config = root / "config"
    config.mkdir()
    identity = {"ServerApp": {"identity_provider_class": "tests.ui.named_identity.BobIdentityProvider"}}
    (config / "jupyter_server_config.json").write_text(json.dumps(identity))
    started = Lab(root, llm)
    yield started
    started.stop()


def test_a_non_admin_sees_the_providers_read_only_and_can_test_them(
    browser: Any, named_lab: Lab, llm: ScriptedLLM
) -> None:
    before = (named_lab.home / "settings.json").read_bytes()
    with watched_page(browser, named_lab) as page:
        open_sidebar(page)
        widen_sidebar(page)
        page.click('#nini-panel .lm-TabBar-tab:has-text("Models")')
        page.wait_for_selector('.nini-models[data-editable="false"] .nini-provider[data-name="local"]')
        assert page.is_visible(".nini-models-read-only") and "server.admins" in page.inner_text(
            ".nini-models-read-only"
        )
        assert not page.is_visible(".nini-provider-form") and page.locator('button:has-text("Edit")').count() == 0
        llm.reply(text("OK"))
        page.click('.nini-provider[data-name="local"] button:has-text("Test")')
        page.wait_for_selector('.nini-provider-result[data-ok="true"]')
        assert page.inner_text(".nini-provider-result").startswith("OK: ")
        screenshot(page, "models-read-only")
        refused = page.evaluate("""async () => {
            const xsrf = document.cookie.split('; ').find(c => c.startsWith('_xsrf='))?.split('=')[1] ?? '';
            const reply = await fetch('/nini/api/models/providers/local', {method: 'PUT', headers: {'X-XSRFToken': xsrf},
                body: JSON.stringify({kind: 'openai', base_url: 'http://127.0.0.1:9/v1', model: 'm'})});
            return [reply.status, (await reply.json()).error.code];
        }""")
    assert refused == [403, "POLICY_VIOLATION"]
    assert (named_lab.home / "settings.json").read_bytes() == before
    assert llm.requests[-1]["max_tokens"] == 5  # the test went to the configured provider
