"""Tornado handlers for cells the agent proposed (``propose_cell``) and the user's answer to each.

The sidebar shows a proposal as a pending cell with Accept / Reject; only the user's click changes
the notebook, in the browser. Here the answer is recorded (once per proposal) and published as a
``proposal_decided`` event, so every client watching the session sees it.
"""

from __future__ import annotations

import logging

from jupyter_server.auth.decorator import authorized
from tornado import web

from jupyter_ext.handlers.base import NiniHandler
from jupyter_ext.handlers.bodies import ProposalBody, check_id
from nini.errors import NiniError
from nini.skills.builtin.notebook import decide_proposal, list_proposals

log = logging.getLogger("nini.jupyter")


class ProposalsHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def get(self, session_id: str) -> None:
        """The session's proposals, oldest first: ``[{proposal_id, cell_type, language, source,
        position, replaces, diff, status, ran, decided_at}]``."""
        await self.session(session_id)
        store = self.runtime.store
        self.reply(await store.call(list_proposals, store, session_id))


class ProposalHandler(NiniHandler):
    @web.authenticated
    @authorized
    async def post(self, session_id: str, proposal_id: str) -> None:
        """Body ``{"decision": "accept"|"reject", "ran"?: bool}``: the proposal, answered.
        NOT_FOUND for an unknown proposal, CONFLICT for one answered already."""
        body = self.parse(ProposalBody)
        decision, ran = body.decision, body.ran
        check_id("proposal_id", proposal_id)
        await self.session(session_id)
        events = self.runtime.events
        decided = await self.runtime.store.call(decide_proposal, events, session_id, proposal_id, decision, ran)
        try:  # the answer is feedback on the proposal, for preference learning; it never fails the answer
            await self.runtime.preferences.feedback(proposal_id, decision)
        except NiniError as exc:
            log.warning("proposal %s: its feedback was not recorded: %s", proposal_id, exc.code)
        self.reply(decided)


SESSION = r"/nini/api/sessions/([^/]+)"
handlers = [
    (SESSION + r"/proposals", ProposalsHandler),
    (SESSION + r"/proposals/([^/]+)", ProposalHandler),
]
