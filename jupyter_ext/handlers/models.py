"""Tornado handlers for the models: what is configured and usable, saving and removing a provider,
and testing one with a single tiny call (``nini.agent.model_admin`` holds the rules).

A saved or removed provider takes effect at once (``Runtime.reload_models``): no restart. Keys are
never accepted here; a provider names the environment variable that holds its key.

Providers are the server's: only its administrators (``server.admins``, a hub's admins, and the
server's own user) save or remove one, or test an unsaved one (it is the form being saved); anyone
else sees them read-only (GET says ``editable``) and may test a configured one, which calls its own
base URL with its own key variable.
"""

from __future__ import annotations

import os
from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import KeyVariableBody, Passed, ProviderNameBody, check_name
from nini.agent.model_admin import (
    delete_provider,
    describe_models,
    key_env_status,
    provider_from_body,
    save_provider,
    test_provider,
    test_routes,
)
from nini.errors import ErrorCode, NiniError
from nini.owners import check_configure


class ModelsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self) -> None:
        """``{providers: [{name, kind, base_url, model, api_key_env, vision_models, enabled, usable,
        reason}], purposes: {purpose: {chain, skipped, error}}, editable}``: what ``nini doctor`` says
        of models, and whether the caller may change them."""
        described = describe_models(self.runtime.router, self.runtime.settings.home)
        self.reply({**described, "editable": self.viewer.may_configure})


class ProviderHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def put(self, name: str | None = None) -> None:
        """Body: the provider's fields. Saved into settings.json (replacing the one of that name, else
        appended) and used from the next model call on; replies the provider as GET shows it.
        INVALID_ARGUMENT without a name (``.../providers/``: the empty form)."""
        runtime = self.runtime
        check_configure(self.viewer, "providers", runtime.settings.ui.current_language)
        name = _named(name)
        body = self.parse(Passed).fields  # provider_from_body checks them, as ProviderSettings
        provider = provider_from_body(name, body, runtime.settings.server, runtime.settings.ui.current_language)
        # on the loop, not a thread: two saves never interleave their read-modify-write of the file
        save_provider(runtime.settings.home, provider)
        await runtime.reload_models()
        self.reply({"provider": self._shown(name)})

    @web.authenticated
    @authorized
    async def delete(self, name: str | None = None) -> None:
        """Remove the provider from settings.json (NOT_FOUND when it is not there): ``{"deleted": name}``."""
        runtime = self.runtime
        check_configure(self.viewer, "providers", runtime.settings.ui.current_language)
        name = _named(name)
        delete_provider(runtime.settings.home, name)
        await runtime.reload_models()
        self.reply({"deleted": name})

    def _shown(self, name: str) -> dict[str, Any] | None:
        """The provider as GET lists it; None when the environment overrides settings.json's list."""
        described = describe_models(self.runtime.router, self.runtime.settings.home)["providers"]
        return next((p for p in described if p["name"] == name), None)


class KeyVariableHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"name": "DEEPSEEK_API_KEY"}``: ``{name, set}``, whether that variable is set in this
        server's environment (where the models' keys are read), never its value. A POST, so a key
        pasted in place of a name stays out of URLs and the access log. Administrators may ask of any
        name (they fill the form); anyone of the key variables configured providers name."""
        name = self.parse(KeyVariableBody).name
        runtime = self.runtime
        if not any(p.api_key_env == name for p in runtime.settings.llm.providers):
            check_configure(self.viewer, "providers", runtime.settings.ui.current_language)
        self.reply(key_env_status(name, os.environ, runtime.settings.server))


class ModelTestHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self) -> None:
        """Body ``{"name"}`` (a configured provider) or a whole provider (unsaved: test before saving,
        an administrator's action). 200 ``{ok: true, provider, model, latency_ms}`` or ``{ok: false,
        provider, reason}``. Body ``{"all": true}``: each purpose's first choice, as ``nini models
        test``: ``{results: [{target, ok, detail}]}``. Each calls the provider's own base URL with its
        own key variable, never one holding a server secret (POLICY_VIOLATION)."""
        body = self.parse(Passed).fields  # one of three bodies, told apart by their fields
        runtime = self.runtime
        if body == {"all": True}:
            results = await test_routes(runtime.settings, router=runtime.router)
            self.reply({"results": [{"target": target, "ok": ok, "detail": detail} for target, ok, detail in results]})
            return
        if set(body) == {"name"}:
            name = self.parse(ProviderNameBody).name
            provider = next((p for p in runtime.settings.llm.providers if p.name == name), None)
            if provider is None:
                raise NiniError(
                    ErrorCode.NOT_FOUND,
                    f"no provider named {name!r}; send the whole provider to test one that is not saved",
                    {"name": name},
                )
        elif not body:
            raise NiniError(ErrorCode.INVALID_ARGUMENT, 'the body must be {"name": "<provider>"} or a whole provider')
        else:
            check_configure(self.viewer, "providers", runtime.settings.ui.current_language)
            provider = provider_from_body(None, body, runtime.settings.server, runtime.settings.ui.current_language)
        self.reply(await test_provider(provider, os.environ, runtime.settings))


def _named(name: str | None) -> str:
    """The provider name of the URL; INVALID_ARGUMENT for none (``PUT .../providers/``: a form saved empty)."""
    if not name:
        raise NiniError(
            ErrorCode.INVALID_ARGUMENT,
            "a provider needs a name: PUT /nini/api/models/providers/<name>",
            {"field": "name"},
        )
    return check_name("name", name)


handlers = [
    (r"/nini/api/models", ModelsHandler),
    (r"/nini/api/models/test", ModelTestHandler),
    (r"/nini/api/models/key-variable", KeyVariableHandler),
    (r"/nini/api/models/providers/?([^/]*)", ProviderHandler),
]
