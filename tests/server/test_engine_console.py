"""The console's role in-process, on both stores (the app over ASGI, its engine at hand):
a person's sessions revoked at once, a sign-in code stored only as a hash, and hostile
posts to the console's routes answered with a page, never a 500."""

from __future__ import annotations

import hashlib
import json
import re

from http_support import AppUnderTest, svc_fixture

from humanwire.server.engine.console import address_of

__all__ = ["svc_fixture"]  # the fixture, imported to be found

PHONE = "+12025550160"


async def _confirmed(svc: AppUnderTest) -> str:
    made = await svc.client.post(
        "/people", json={"name": "Ada", "addresses": [{"channel": "sms", "to": PHONE}]}
    )
    assert made.status_code == 201, made.text
    person_id: str = made.json()["personId"]
    sent = await svc.client.post(f"/people/{person_id}/confirm", json={"channel": "sms"})
    [delivery] = [
        d for d in await svc.deliveries() if d["interactionId"] == sent.json()["interactionId"]
    ]
    code = re.search(r"\b\d{6}\b", delivery["text"])
    assert code is not None
    reply = {"channel": "sms", "from": PHONE, "to": delivery["from"], "body": code.group(0)}
    assert (await svc.client.post("/sandbox/replies", json=reply)).status_code < 300
    return person_id


async def _code(svc: AppUnderTest) -> str:
    newest_first = sorted(await svc.deliveries(), key=lambda d: str(d["createdAt"]), reverse=True)
    for delivery in newest_first:
        found = re.search(r"sign-in code is (\d{6})", delivery["text"])
        if found is not None and delivery["to"] == PHONE:
            return found.group(1)
    raise AssertionError("no sign-in code was sent")


def test_addresses_are_read_as_people_type_them() -> None:
    assert address_of(" +1 (202) 555-0160 ") == (("sms", "whatsapp"), PHONE)
    assert address_of("Ada@Example.COM") == (("email",), "ada@example.com")
    for nothing in ("", "ada", "12025550160", "+0123", "a@b@c", "x" * 400 + "@example.com"):
        assert address_of(nothing) is None, nothing


async def test_revoking_a_person_ends_every_session_of_theirs(svc: AppUnderTest) -> None:
    person_id = await _confirmed(svc)
    console = svc.engine.console
    tokens = []
    for _ in range(2):
        await console.send_code(PHONE)
        opened = await console.sign_in(PHONE, await _code(svc))
        assert opened is not None and opened[0].person_id == person_id
        tokens.append(opened[1])
    assert tokens[0] != tokens[1]
    for token in tokens:
        assert await console.person_of(token) is not None
    account = (await console.person_of(tokens[0])).account  # type: ignore[union-attr]
    assert await console.revoke(account, person_id) == 2
    for token in tokens:
        assert await console.person_of(token) is None


async def test_the_code_is_stored_only_as_a_hash(svc: AppUnderTest) -> None:
    await _confirmed(svc)
    await svc.engine.console.send_code(PHONE)
    code = await _code(svc)
    key = hashlib.sha256(f"console-address\n{PHONE}".encode()).hexdigest()
    row = await svc.engine.store.console_code(key)
    assert row is not None and row.code_hash is not None
    assert code not in repr(row)
    # The message's interaction keeps its text with the code masked.
    [sent] = [d for d in await svc.deliveries() if code in d["text"]]
    record = await svc.engine.store.get_interaction(sent["interactionId"])
    assert record is not None and record.request["_console"]
    assert code not in json.dumps(record.request) and "••••••" in record.request["_text"]


async def test_no_row_of_the_service_keeps_a_confirmation_code(svc: AppUnderTest) -> None:
    # The people directory's code, as the console's: only the sandbox's delivery has it.
    made = await svc.client.post(
        "/people", json={"name": "Bo", "addresses": [{"channel": "email", "to": "bo@example.com"}]}
    )
    person_id = made.json()["personId"]
    sent = await svc.client.post(f"/people/{person_id}/confirm", json={"channel": "email"})
    assert sent.status_code == 200, sent.text
    [delivery] = [
        d for d in await svc.deliveries() if d["interactionId"] == sent.json()["interactionId"]
    ]
    code = re.search(r"\b\d{6}\b", delivery["text"])
    assert code is not None
    record = await svc.engine.store.get_interaction(sent.json()["interactionId"])
    assert record is not None and "••••••" in record.request["_text"]
    assert code.group(0) not in json.dumps(record.request)


async def test_hostile_posts_get_a_page_never_a_500(svc: AppUnderTest) -> None:
    async with svc.anonymous() as client:
        page = await client.get("/console/signin")
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert csrf is not None
        for path in ("/console/signin", "/console/code"):
            as_json = await client.post(path, json={"address": PHONE})
            assert as_json.status_code == 400, as_json.text
            wild = await client.post(
                path,
                data={"csrf": csrf.group(1), "address": "\x00" * 5000, "code": "<script>"},
            )
            assert wild.status_code in (200, 400), wild.text
            assert "<script>" not in wild.text
        for path in ("/console/approvals/../../etc", "/console/approvals/%00"):
            answer = await client.post(path, data={"csrf": csrf.group(1), "decision": "approve"})
            assert answer.status_code in (401, 404), answer.text
        assert (await client.get("/console/approvals/x")).status_code == 303
