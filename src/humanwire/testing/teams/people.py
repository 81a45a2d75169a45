"""What Teams sends a bot when people act: activities (an install, a message, an
``Action.Execute`` invoke, an ``Action.Submit``), each held to the description's
``Activity``, signed as the Bot Framework signs them (an RS256 JWT in ``Authorization:
Bearer``: ``iss`` ``https://api.botframework.com``, ``aud`` the app id, ``serviceurl``
the activity's, by the fake's key, whose public half its key set serves) and POSTed to
the bot's messaging endpoint. An invoke's answer is applied: the card it carries
replaces the clicked one.

Each action is one pure step (``_Delivery``) driven blocking or async (the code under
test may run in the caller's event loop). ``token`` makes any token, hostile ones too.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import httpx

from .spec import ConnectorSpec
from .state import ISSUER, FakeActivity, TeamsState

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPrivateKey

    from .state import FakeTeamsUser

__all__ = ["ActivitySender"]

CARD = "application/vnd.microsoft.card.adaptive"
_TIMEOUT = 10.0


@dataclass(frozen=True)
class _Delivery:
    activity: dict[str, Any]
    clicked: FakeActivity | None = None


class ActivitySender:
    """Sends ``state``'s people's activities to ``messaging_endpoint`` (the bot's)."""

    def __init__(self, state: TeamsState, spec: ConnectorSpec) -> None:
        self.state = state
        self.spec = spec
        self.messaging_endpoint: str | None = None

    # -- tokens ------------------------------------------------------------------------
    def token(
        self,
        service_url: str | None = None,
        *,
        key: RSAPrivateKey | None = None,
        kid: str | None = None,
        algorithm: str = "RS256",
        **claims: Any,
    ) -> str:
        """A Bot Framework token for an activity of ``service_url``; ``claims`` override
        or (as None) remove its claims, ``key``/``kid`` sign it with another key (``kid=""``:
        none named), ``algorithm="HS256"`` with a guessable secret."""
        import jwt

        now = int(time.time())
        payload: dict[str, Any] = {
            "iss": ISSUER,
            "aud": self.state.app_id,
            "serviceurl": service_url or self.state.service_url,
            "nbf": now - 5,
            "iat": now - 5,
            "exp": now + 3600,
        }
        for name, value in claims.items():
            if value is None:
                payload.pop(name, None)
            else:
                payload[name] = value
        signer: Any = key or self.state.signing_key
        if algorithm == "HS256":
            signer = "a shared secret anyone could guess"
        kid = self.state.key_id if kid is None else kid
        return jwt.encode(payload, signer, algorithm=algorithm, headers={"kid": kid} if kid else {})

    # -- what people do ----------------------------------------------------------------
    def install(self, user: FakeTeamsUser) -> httpx.Response:
        """``user`` installs the bot as a personal app (an ``installationUpdate``)."""
        return self._send_blocking(self._install(user))

    def say(self, user: FakeTeamsUser, text: str) -> httpx.Response:
        """``user`` writes ``text`` in their chat with the bot."""
        return self._send_blocking(self._say(user, text))

    async def asay(self, user: FakeTeamsUser, text: str) -> httpx.Response:
        return await self._send_async(self._say(user, text))

    def execute(
        self, activity: FakeActivity, user: FakeTeamsUser, verb: str, inputs: dict[str, Any] | None
    ) -> httpx.Response:
        """``user`` presses the ``Action.Execute`` of ``verb`` on ``activity``'s card
        (with the card's ``inputs`` filled in)."""
        return self._send_blocking(self._execute(activity, user, verb, inputs or {}))

    async def aexecute(
        self, activity: FakeActivity, user: FakeTeamsUser, verb: str, inputs: dict[str, Any] | None
    ) -> httpx.Response:
        return await self._send_async(self._execute(activity, user, verb, inputs or {}))

    def submit(
        self, activity: FakeActivity, user: FakeTeamsUser, inputs: dict[str, Any] | None
    ) -> httpx.Response:
        """``user`` presses the ``Action.Submit`` on ``activity``'s card: Teams sends a
        message activity whose ``value`` is the action's data (and the inputs)."""
        return self._send_blocking(self._submit(activity, user, inputs or {}))

    def post(self, body: bytes, token: str | None) -> httpx.Response:
        """Any body with any token (None: no ``Authorization``): for the bot's refusals."""
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        with httpx.Client(timeout=_TIMEOUT) as client:
            return client.post(self._url(), content=body, headers=headers)

    # -- the steps ---------------------------------------------------------------------
    def _base(self, user: FakeTeamsUser, kind: str) -> dict[str, Any]:
        conversation = self.state.personal_conversation(user)
        return {
            "type": kind,
            "id": self.state.next_id(),
            "timestamp": datetime.now(timezone.utc).isoformat().replace("+00:00", "Z"),
            "serviceUrl": self.state.service_url,
            "channelId": "msteams",
            "from": user.account(),
            "recipient": {"id": self.state.bot_id, "name": "humanwire"},
            "conversation": {
                "id": conversation.id,
                "conversationType": "personal",
                "tenantId": self.state.tenant_id,
            },
            "channelData": {"tenant": {"id": self.state.tenant_id}},
            "locale": "en-US",
        }

    def _install(self, user: FakeTeamsUser) -> _Delivery:
        conversation = self.state.personal_conversation(user)
        with self.state.lock:
            conversation.installed = True
        return _Delivery({**self._base(user, "installationUpdate"), "action": "add"})

    def _say(self, user: FakeTeamsUser, text: str) -> _Delivery:
        activity = {**self._base(user, "message"), "text": text, "textFormat": "plain"}
        self.state.add_activity(activity["conversation"]["id"], user.id, activity)
        return _Delivery(activity)

    def _execute(
        self, activity: FakeActivity, user: FakeTeamsUser, verb: str, inputs: dict[str, Any]
    ) -> _Delivery:
        found = [
            action
            for action in activity.actions()
            if action.get("type") == "Action.Execute" and action.get("verb") == verb
        ]
        if not found:
            raise ValueError(f"activity {activity.id} shows no Action.Execute {verb!r}")
        data = {**(found[0].get("data") or {}), **inputs}
        body = {
            **self._base(user, "invoke"),
            "name": "adaptiveCard/action",
            "replyToId": activity.id,
            "value": {
                "action": {"type": "Action.Execute", "verb": verb, "data": data},
                "trigger": "manual",
            },
        }
        return _Delivery(body, clicked=activity)

    def _submit(
        self, activity: FakeActivity, user: FakeTeamsUser, inputs: dict[str, Any]
    ) -> _Delivery:
        found = [action for action in activity.actions() if action.get("type") == "Action.Submit"]
        if not found:
            raise ValueError(f"activity {activity.id} shows no Action.Submit")
        data = found[0].get("data")
        value = {**(data if isinstance(data, dict) else {}), **inputs}
        body = {**self._base(user, "message"), "replyToId": activity.id, "value": value}
        return _Delivery(body)

    # -- sending -----------------------------------------------------------------------
    def _url(self) -> str:
        if not self.messaging_endpoint:
            raise RuntimeError("set fake.messaging_endpoint to the bot's messaging endpoint")
        return self.messaging_endpoint

    def _prepared(self, delivery: _Delivery) -> tuple[bytes, dict[str, str]]:
        problem = self.spec.check_activity(delivery.activity)
        if problem is not None:  # the fake's own activity: a bug of the fake
            raise AssertionError(f"the fake built an activity the description refuses: {problem}")
        body = json.dumps(delivery.activity).encode()
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {self.token(delivery.activity['serviceUrl'])}",
        }
        return body, headers

    def _send_blocking(self, delivery: _Delivery) -> httpx.Response:
        body, headers = self._prepared(delivery)
        with httpx.Client(timeout=_TIMEOUT) as client:
            response = client.post(self._url(), content=body, headers=headers)
        self._apply(delivery, response)
        return response

    async def _send_async(self, delivery: _Delivery) -> httpx.Response:
        body, headers = self._prepared(delivery)
        async with httpx.AsyncClient(timeout=_TIMEOUT) as client:
            response = await client.post(self._url(), content=body, headers=headers)
        self._apply(delivery, response)
        return response

    def _apply(self, delivery: _Delivery, response: httpx.Response) -> None:
        """Records the answer; an invoke's card answer replaces the clicked card."""
        try:
            answer: Any = response.json() if response.content else None
        except ValueError:
            answer = response.text
        state = self.state
        with state.lock:
            state.answers.append((delivery.activity, response.status_code, answer))
        if response.status_code >= 300:
            with state.lock:
                state.errors.append(
                    f"{delivery.activity['type']} {delivery.activity['id']} answered "
                    f"{response.status_code}: {str(answer)[:200]}"
                )
            return
        if delivery.activity["type"] != "invoke" or delivery.clicked is None:
            return
        if not isinstance(answer, dict) or answer.get("statusCode") != 200:
            with state.lock:
                state.errors.append(f"an invoke's answer is no card response: {answer!r}")
            return
        if answer.get("type") == CARD and isinstance(answer.get("value"), dict):
            problem = self.spec.cards.problem(answer["value"])
            if problem is not None:
                with state.lock:
                    state.errors.append(f"an invoke's answer: {problem}")
            replaced = {
                **delivery.clicked.current,
                "attachments": [{"contentType": CARD, "content": answer["value"]}],
            }
            with state.lock:
                delivery.clicked.edits.append(replaced)
        elif answer.get("type") != "application/vnd.microsoft.activity.message":
            with state.lock:
                state.errors.append(f"an invoke's answer of unknown type: {answer.get('type')!r}")
