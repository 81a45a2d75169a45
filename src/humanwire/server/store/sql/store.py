"""``SQLStore``: every ``Store`` method the two stores run alike, written once.

Django's database backends are the model: this base holds the methods; a backend
(``SQLiteStore``, ``PostgresStore``) supplies its rendered statements (``q``, a
``Statements`` subclass) and a small executor, and overrides only the methods it runs
differently. The executor is all that knows how a statement is run:

* ``_one`` / ``_all``: a read, its first row / every row;
* ``_run``: a write, the rows it changed;
* ``_insert_id``: an insert, the key the database gave the new row;
* ``_tx(n)``: ``n`` statements that commit together, none read on the way (PostgreSQL
  sends them as one pipeline: one round trip);
* ``_transaction()``: statements that commit together and may read on the way.

Every method and the executor are coroutines: on PostgreSQL a round trip is awaited
(psycopg's async connections), so the event loop serves other requests meanwhile. SQLite
runs its statements at once inside them (a local file; nothing to wait on).

On PostgreSQL each executor call is one round trip (``_transaction``'s statements aside),
and the round trips of a send and of an answer are pinned by tests: a method here makes
no call it does not need. How to add a column or a method: ``docs/explanation/stores.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar, Protocol

from ....types import DeliveryStatus
from ....types.approvals import ApprovalDecision, ApprovalOutcome
from ....types.sandbox import DeliveryChannel, DeliveryKind
from ...approvals.checkpoints import Checkpoint
from ..records import (
    ACCOUNT_TABLES,
    AccountRecord,
    AccountUsage,
    ApprovalQuery,
    ApprovalRecord,
    ApproverRecord,
    AuditDraft,
    AuditQuery,
    AuditRecord,
    ChannelRecord,
    ClaimRecord,
    ConsoleCodeRecord,
    ConsoleSessionRecord,
    DelegationRecord,
    DeliveryRecord,
    EventRecord,
    GrantRecord,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InboxSessionRecord,
    InteractionOutcome,
    InteractionRecord,
    ListedApproval,
    NumberRecord,
    OutboxRecord,
    PeopleQuery,
    PersonAddressRecord,
    PersonCodeRecord,
    PersonRecord,
    Reassignment,
    StepRecord,
    WebhookRecord,
)
from . import rows
from .statements import Statements

__all__ = ["SQLStore", "Transaction"]

Row = tuple[Any, ...]


class Transaction(Protocol):
    """Statements run inside ``_tx`` / ``_transaction``."""

    async def execute(self, query: str, params: Sequence[Any] = (), /) -> None: ...
    async def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> None: ...
    async def one(self, query: str, params: Sequence[Any] = (), /) -> Row | None:
        """The first row (``_transaction`` only: a ``_tx`` reads nothing on the way)."""
        ...

    async def run(self, query: str, params: Sequence[Any] = (), /) -> int:
        """The rows the statement changed (``_transaction`` only)."""
        ...


class SQLStore:
    """The shared methods of ``Store``, on the executor a backend implements."""

    q: ClassVar[Statements]
    """The backend's statements, rendered for its database."""
    account_tables: ClassVar[tuple[str, ...]] = ACCOUNT_TABLES
    """Tables whose rows an account's deletion removes (by their ``account_id``)."""

    # -- the executor (each backend's) ----------------------------------------------------
    async def _one(self, query: str, params: Sequence[Any] = ()) -> Row | None:
        raise NotImplementedError

    async def _all(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    async def _run(self, query: str, params: Sequence[Any] = ()) -> int:
        raise NotImplementedError

    async def _insert_id(self, query: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

    def _tx(self, statements: int) -> AbstractAsyncContextManager[Transaction]:
        raise NotImplementedError

    def _transaction(self) -> AbstractAsyncContextManager[Transaction]:
        raise NotImplementedError

    # -- accounts ---------------------------------------------------------------------------
    async def insert_account(self, record: AccountRecord) -> None:
        await self._run(self.q.insert_account, rows.account_values(record))

    async def account_by_key_hash(self, key_hash: str) -> AccountRecord | None:
        row = await self._one(self.q.account_by_key_hash, (key_hash,))
        return rows.account(row) if row else None

    async def get_account(self, account_id: str) -> AccountRecord | None:
        row = await self._one(self.q.get_account, (account_id,))
        return rows.account(row) if row else None

    async def set_account_suspended(self, account_id: str, suspended: bool) -> None:
        await self._run(self.q.set_account_suspended, (bool(suspended), account_id))

    async def count_accounts(self) -> int:
        row = await self._one(self.q.count_accounts)
        return int(row[0]) if row else 0

    async def list_accounts(self) -> list[AccountRecord]:
        return [rows.account(row) for row in await self._all(self.q.list_accounts)]

    async def account_usage(self) -> dict[str, AccountUsage]:
        q = self.q
        return rows.usage_from_counts(
            await self._all(q.interactions_per_account),
            {
                "numbers": await self._all(q.numbers_per_account),
                "webhooks": await self._all(q.webhooks_per_account),
                "channels": await self._all(q.channels_per_account),
            },
        )

    async def set_account_key_hash(self, account_id: str, key_hash: str) -> bool:
        return await self._run(self.q.set_account_key_hash, (key_hash, account_id)) > 0

    async def delete_account(self, account_id: str) -> dict[str, int] | None:
        async with self._transaction() as tx:
            return await self._delete_account_rows(tx, account_id)

    async def _delete_account_rows(self, tx: Transaction, account_id: str) -> dict[str, int] | None:
        q = self.q
        # Locks the row where the database can (PostgreSQL): a concurrent rotate or
        # suspend waits, then finds nothing.
        if await tx.one(q.account_to_delete, (account_id,)) is None:
            return None
        # Provider state names the account in its value (Slack installs, OAuth states)
        # or is keyed by one of its interactions (decisions) or numbers; a call's state
        # names its interaction. Deleted before those rows go.
        removed = {
            "provider_state": await tx.run(q.delete_provider_state_of_account, (account_id,) * 4)
        }
        for table in self.account_tables:
            statement = q.render(f"DELETE FROM {table} WHERE account_id = ?")
            removed[table] = await tx.run(statement, (account_id,))
        removed["accounts"] = await tx.run(q.delete_account, (account_id,))
        return removed

    # -- the inbox's sessions ---------------------------------------------------------------
    async def insert_inbox_session(self, record: InboxSessionRecord) -> None:
        await self._run(self.q.insert_inbox_session, rows.inbox_session_values(record))

    async def inbox_session(
        self, id_hash: str, now: float, idle_after: float
    ) -> tuple[InboxSessionRecord, AccountRecord] | None:
        row = await self._one(self.q.inbox_session, (id_hash, now, idle_after))
        return rows.inbox_session(row) if row is not None else None

    async def touch_inbox_session(self, id_hash: str, seen_at: float) -> None:
        await self._run(self.q.touch_inbox_session, (seen_at, id_hash, seen_at))

    async def delete_inbox_session(self, id_hash: str) -> bool:
        return await self._run(self.q.delete_inbox_session, (id_hash,)) > 0

    async def prune_inbox_sessions(self, now: float, idle_after: float) -> int:
        return await self._run(self.q.prune_inbox_sessions, (now, idle_after))

    # -- interactions -----------------------------------------------------------------------
    # -- the console's sign-in codes and sessions --------------------------------------------
    async def confirmed_people_at(self, channel: str, to_addr: str) -> list[tuple[str, str]]:
        found = await self._all(self.q.confirmed_people_at, (channel, to_addr))
        return [(str(row[0]), str(row[1])) for row in found]

    async def console_code(self, address_key: str) -> ConsoleCodeRecord | None:
        row = await self._one(self.q.console_code, (address_key,))
        return rows.console_code(row) if row is not None else None

    async def put_console_code(self, record: ConsoleCodeRecord) -> None:
        await self._run(self.q.put_console_code, rows.console_code_values(record))

    async def spend_console_code(self, address_key: str, code_hash: str, now: float) -> bool:
        return await self._run(self.q.spend_console_code, (address_key, code_hash, now)) > 0

    async def miss_console_code(self, address_key: str, code_hash: str, most: int) -> None:
        await self._run(self.q.miss_console_code, (most, address_key, code_hash))

    async def prune_console_codes(self, window_before: float, now: float) -> int:
        return await self._run(self.q.prune_console_codes, (window_before, now))

    async def insert_console_session(self, record: ConsoleSessionRecord) -> None:
        await self._run(self.q.insert_console_session, rows.console_session_values(record))

    async def console_session(
        self, id_hash: str, now: float, idle_after: float
    ) -> ConsoleSessionRecord | None:
        row = await self._one(self.q.console_session, (id_hash, now, idle_after))
        return rows.console_session(row) if row is not None else None

    async def touch_console_session(self, id_hash: str, seen_at: float) -> None:
        await self._run(self.q.touch_console_session, (seen_at, id_hash, seen_at))

    async def delete_console_session(self, id_hash: str) -> bool:
        return await self._run(self.q.delete_console_session, (id_hash,)) > 0

    async def delete_console_sessions_of(self, account_id: str, person_id: str) -> int:
        return await self._run(self.q.delete_console_sessions_of, (account_id, person_id))

    async def prune_console_sessions(self, now: float, idle_after: float) -> int:
        return await self._run(self.q.prune_console_sessions, (now, idle_after))

    # -- interactions -------------------------------------------------------------------------
    async def _interaction_by(self, query: str, params: Sequence[Any]) -> InteractionRecord | None:
        row = await self._one(query, params)
        return rows.interaction(row) if row else None

    async def get_interaction(self, interaction_id: str) -> InteractionRecord | None:
        return await self._interaction_by(self.q.get_interaction, (interaction_id,))

    async def interaction_by_form_token(self, token: str) -> InteractionRecord | None:
        return await self._interaction_by(self.q.interaction_by_form_token, (token,))

    async def interaction_by_reply_token(self, token: str) -> InteractionRecord | None:
        return await self._interaction_by(self.q.interaction_by_reply_token, (token,))

    async def interaction_by_provider_ref(self, provider_ref: str) -> InteractionRecord | None:
        return await self._interaction_by(self.q.interaction_by_provider_ref, (provider_ref,))

    async def latest_open_message(
        self, account_id: str | None, channel: str, to_addr: str, from_addr: str
    ) -> InteractionRecord | None:
        if account_id is None:
            return await self._interaction_by(
                self.q.latest_open_message_of_anyone, (channel, to_addr, from_addr)
            )
        return await self._interaction_by(
            self.q.latest_open_message, (account_id, channel, to_addr, from_addr)
        )

    async def open_messages(
        self, channel: str, to_addr: str, from_addr: str
    ) -> list[InteractionRecord]:
        found = await self._all(self.q.open_messages, (channel, to_addr, from_addr))
        return [rows.interaction(row) for row in found]

    async def open_interactions(self) -> list[InteractionRecord]:
        return [rows.interaction(row) for row in await self._all(self.q.open_interactions)]

    async def list_interactions(self, account_id: str, limit: int) -> list[InteractionRecord]:
        found = await self._all(self.q.list_interactions, (account_id, limit))
        return [rows.interaction(row) for row in found]

    async def end_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: InteractionOutcome | None = None,
    ) -> bool:
        # The window step goes with the end (PostgreSQL: one statement of its own).
        result_text = rows.dumps_json(result) if result is not None else None
        params = (ended_at, result_text, outcome, interaction_id)
        async with self._transaction() as tx:
            await tx.execute(self.q.unarm_window, (interaction_id,))
            return await tx.run(self.q.end_interaction, params) > 0

    async def set_delivery(
        self, interaction_id: str, delivery_status: DeliveryStatus, provider_ref: str | None = None
    ) -> None:
        if provider_ref is None:
            await self._run(self.q.set_delivery, (delivery_status, delivery_status, interaction_id))
        else:
            await self._run(
                self.q.set_delivery_and_ref,
                (delivery_status, delivery_status, provider_ref, interaction_id),
            )

    # -- what real providers keep between callbacks -------------------------------------------
    async def get_provider_state(self, scope: str, key: str) -> dict[str, Any] | None:
        row = await self._one(self.q.get_provider_state, (scope, key))
        if row is None:
            return None
        value = json.loads(row[0])
        assert isinstance(value, dict)
        return value

    async def put_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> None:
        await self._run(self.q.put_provider_state, (scope, key, rows.dumps_json(value), updated_at))

    async def claim_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> bool:
        params = (scope, key, rows.dumps_json(value), updated_at)
        return await self._run(self.q.claim_provider_state, params) > 0

    async def provider_states(self, scope: str) -> list[tuple[str, dict[str, Any]]]:
        found = await self._all(self.q.provider_states, (scope,))
        return [(str(row[0]), json.loads(row[1])) for row in found]

    async def delete_provider_state(self, scope: str, key: str) -> None:
        await self._run(self.q.delete_provider_state, (scope, key))

    async def delete_provider_state_before(self, scope: str, cutoff: float) -> None:
        await self._run(self.q.delete_provider_state_before, (scope, cutoff))

    # -- the outcome stream ---------------------------------------------------------------------
    async def outcomes_after(
        self, account_id: str, after: int, limit: int
    ) -> list[tuple[int, dict[str, Any]]]:
        found = await self._all(self.q.outcomes_after, (account_id, after, limit))
        return [(int(row[0]), json.loads(row[1])) for row in found]

    async def last_outcome_id(self) -> int:
        row = await self._one(self.q.last_outcome_id)
        return int(row[0]) if row and row[0] is not None else 0

    async def delete_outcomes_before(self, cutoff: float) -> None:
        await self._run(self.q.delete_outcomes_before, (cutoff,))

    # -- deliveries and inbound messages ----------------------------------------------------
    async def insert_delivery(
        self,
        *,
        id: str,
        account_id: str,
        interaction_id: str | None,
        channel: DeliveryChannel,
        kind: DeliveryKind,
        from_addr: str | None,
        to_addr: str,
        text: str,
        form_url: str | None,
        created_at: float,
    ) -> DeliveryRecord:
        values = (
            id,
            account_id,
            interaction_id,
            channel,
            kind,
            from_addr,
            to_addr,
            text,
            form_url,
            created_at,
        )
        seq = await self._insert_id(self.q.insert_delivery, values)
        return rows.delivery((seq, *values))

    async def list_deliveries(
        self,
        account_id: str,
        to_addr: str | None = None,
        channel: str | None = None,
        interaction_id: str | None = None,
        limit: int = 500,
    ) -> list[DeliveryRecord]:
        q = self.q
        query = q.list_deliveries
        params: list[Any] = [account_id]
        for column, value in (
            ("to_addr", to_addr),
            ("channel", channel),
            ("interaction_id", interaction_id),
        ):
            if value is not None:
                query += f" AND {column} = {q.placeholder}"
                params.append(value)
        params.append(limit)
        return [
            rows.delivery(row) for row in await self._all(query + q.list_deliveries_end, params)
        ]

    async def delivery_seq(self, account_id: str, delivery_id: str) -> int | None:
        row = await self._one(self.q.delivery_seq, (account_id, delivery_id))
        return int(row[0]) if row else None

    async def max_delivery_seq(self, account_id: str) -> int:
        row = await self._one(self.q.max_delivery_seq, (account_id,))
        return int(row[0]) if row and row[0] is not None else 0

    async def insert_inbound(self, record: InboundRecord) -> None:
        await self._run(self.q.insert_inbound, rows.inbound_values(record))

    async def inbound_by_ref(self, ref: str) -> InboundRecord | None:
        row = await self._one(self.q.inbound_by_ref, (ref,))
        return rows.inbound(row) if row else None

    async def list_inbound(self, account_id: str, limit: int) -> list[InboundRecord]:
        return [
            rows.inbound(row) for row in await self._all(self.q.list_inbound, (account_id, limit))
        ]

    # -- numbers ----------------------------------------------------------------------------
    async def insert_number(self, record: NumberRecord) -> None:
        await self._run(self.q.insert_number, rows.number_values(record))

    async def number_by_phone(self, phone_number: str) -> NumberRecord | None:
        row = await self._one(self.q.number_by_phone, (phone_number,))
        return rows.number(row) if row else None

    async def numbers_of(self, account_id: str) -> list[NumberRecord]:
        return [rows.number(row) for row in await self._all(self.q.numbers_of, (account_id,))]

    async def reserved_phone_numbers(self) -> set[str]:
        return {row[0] for row in await self._all(self.q.reserved_phone_numbers)}

    async def delete_number(self, account_id: str, number_id: str) -> bool:
        return await self._run(self.q.delete_number, (number_id, account_id)) > 0

    # -- webhooks ---------------------------------------------------------------------------
    async def insert_webhook(self, record: WebhookRecord) -> None:
        await self._run(self.q.insert_webhook, rows.webhook_values(record))

    async def webhooks_of(self, account_id: str) -> list[WebhookRecord]:
        return [rows.webhook(row) for row in await self._all(self.q.webhooks_of, (account_id,))]

    async def get_webhook(self, webhook_id: str) -> WebhookRecord | None:
        row = await self._one(self.q.get_webhook, (webhook_id,))
        return rows.webhook(row) if row else None

    async def delete_webhook(self, account_id: str, webhook_id: str) -> bool:
        return await self._run(self.q.delete_webhook, (webhook_id, account_id)) > 0

    # -- out-of-office delegations ----------------------------------------------------------
    async def insert_delegation(self, record: DelegationRecord) -> None:
        await self._run(self.q.insert_delegation, rows.delegation_values(record))

    async def live_delegations(self, account_id: str, now: float) -> list[DelegationRecord]:
        found = await self._all(self.q.live_delegations, (account_id, now))
        return [rows.delegation(row) for row in found]

    async def revoke_delegation(
        self, account_id: str, person_id: str, delegation_id: str, now: float
    ) -> bool:
        params = (now, delegation_id, account_id, person_id, now)
        return await self._run(self.q.revoke_delegation, params) > 0

    # -- standing approvals -------------------------------------------------------------------
    async def insert_grant(self, record: GrantRecord) -> None:
        await self._run(self.q.insert_grant, rows.grant_values(record))

    async def live_grants(
        self, account_id: str, now: float, action_name: str | None = None
    ) -> list[GrantRecord]:
        if action_name is None:
            found = await self._all(self.q.live_grants, (account_id, now))
        else:
            found = await self._all(self.q.live_grants_of_action, (account_id, action_name, now))
        return [rows.grant(row) for row in found]

    async def get_grant(self, account_id: str, grant_id: str) -> GrantRecord | None:
        row = await self._one(self.q.get_grant, (grant_id, account_id))
        return rows.grant(row) if row else None

    async def revoke_grant(self, account_id: str, grant_id: str, now: float) -> bool:
        return await self._run(self.q.revoke_grant, (now, grant_id, account_id, now)) > 0

    # -- channel cards ----------------------------------------------------------------------
    async def insert_channel(self, record: ChannelRecord) -> None:
        await self._run(self.q.insert_channel, rows.channel_values(record))

    async def get_channel(self, account_id: str, channel_id: str) -> ChannelRecord | None:
        row = await self._one(self.q.get_channel, (channel_id, account_id))
        return rows.channel(row) if row else None

    async def channels_of(self, account_id: str) -> list[ChannelRecord]:
        return [rows.channel(row) for row in await self._all(self.q.channels_of, (account_id,))]

    async def delete_channel(self, account_id: str, channel_id: str) -> bool:
        return await self._run(self.q.delete_channel, (channel_id, account_id)) > 0

    # -- the people directory ----------------------------------------------------------------
    async def insert_person(self, record: PersonRecord) -> None:
        q = self.q
        addresses = rows.person_address_values(record)
        async with self._tx(1 + len(addresses)) as tx:
            await tx.execute(q.insert_person, rows.person_values(record))
            if addresses:
                await tx.executemany(q.insert_person_address, addresses)

    async def get_person(self, account_id: str, person_id: str) -> PersonRecord | None:
        row = await self._one(self.q.get_person, (person_id, account_id))
        if row is None:
            return None
        found = await self._all(self.q.person_addresses, (person_id,))
        return rows.person(row, [rows.person_address(a[1:]) for a in found])

    async def list_people(self, query: PeopleQuery) -> list[PersonRecord]:
        q = self.q
        text = q.list_people
        params: list[Any] = [query.account_id, query.after]
        if query.channel is not None or query.to_addr is not None:
            text += q.list_people_at
            params.append(query.account_id)
            for condition, value in (
                (q.list_people_channel, query.channel),
                (q.list_people_to, query.to_addr),
            ):
                if value is not None:
                    text += condition
                    params.append(value)
            text += q.list_people_at_end
        params.append(query.limit)
        found = await self._all(text + q.list_people_end, params)
        if not found:
            return []
        addresses: dict[str, list[PersonAddressRecord]] = {}
        last = int(found[-1][0])
        for row in await self._all(
            q.listed_person_addresses, (query.account_id, query.after, last)
        ):
            addresses.setdefault(row[0], []).append(rows.person_address(row[1:]))
        return [rows.person(row, addresses.get(row[1], [])) for row in found]

    async def update_person(self, record: PersonRecord, *, addresses: bool) -> bool:
        q = self.q
        async with self._transaction() as tx:
            changed = await tx.run(
                q.update_person,
                (
                    record.name,
                    rows.person_values(record)[3],
                    record.updated_at,
                    record.id,
                    record.account_id,
                ),
            )
            if changed and addresses:
                # Replaced whole: a code pending on an address goes with it.
                await tx.execute(q.delete_person_addresses, (record.id, record.account_id))
                values = rows.person_address_values(record)
                if values:
                    await tx.executemany(q.insert_person_address, values)
        return changed > 0

    async def delete_person(self, account_id: str, person_id: str) -> bool:
        q = self.q
        async with self._transaction() as tx:
            await tx.execute(q.delete_person_addresses, (person_id, account_id))
            return await tx.run(q.delete_person, (person_id, account_id)) > 0

    async def set_person_code(
        self,
        account_id: str,
        person_id: str,
        channel: str,
        to_addr: str,
        code_hash: str,
        expires_at: float,
    ) -> bool:
        return (
            await self._run(
                self.q.set_person_code,
                (code_hash, expires_at, person_id, account_id, channel, to_addr),
            )
            > 0
        )

    async def person_code(
        self, person_id: str, channel: str, to_addr: str
    ) -> PersonCodeRecord | None:
        row = await self._one(self.q.person_code, (person_id, channel, to_addr))
        return rows.person_code(row) if row else None

    async def confirm_person_address(self, code: PersonCodeRecord, now: float) -> bool:
        return (
            await self._run(
                self.q.confirm_person_address, (now, code.person_id, code.position, code.code_hash)
            )
            > 0
        )

    async def bind_person_address(self, code: PersonCodeRecord, to_addr: str, now: float) -> bool:
        return (
            await self._run(
                self.q.bind_person_address,
                (to_addr, now, code.person_id, code.position, code.code_hash),
            )
            > 0
        )

    async def miss_person_code(self, code: PersonCodeRecord, most: int) -> None:
        await self._run(
            self.q.miss_person_code, (most, code.person_id, code.position, code.code_hash)
        )

    # -- events and the outbox ------------------------------------------------------------------
    async def insert_event(self, record: EventRecord, outbox: list[OutboxRecord]) -> None:
        async with self._tx(1 + len(outbox)) as tx:
            await tx.execute(self.q.insert_event, rows.event_values(record))
            if outbox:
                await tx.executemany(self.q.insert_outbox, [rows.outbox_values(o) for o in outbox])

    async def get_event(self, event_id: str) -> EventRecord | None:
        row = await self._one(self.q.get_event, (event_id,))
        return rows.event(row) if row else None

    async def list_events(self, account_id: str, limit: int) -> list[EventRecord]:
        return [rows.event(row) for row in await self._all(self.q.list_events, (account_id, limit))]

    async def next_outbox_due(self) -> float | None:
        row = await self._one(self.q.next_outbox_due)
        return float(row[0]) if row and row[0] is not None else None

    async def outbox_depth(self) -> int:
        row = await self._one(self.q.outbox_depth)
        return int(row[0]) if row else 0

    async def update_outbox(
        self,
        outbox_id: str,
        *,
        status: str,
        attempts: int,
        next_attempt_at: float,
        last_error: str | None,
        last_status_code: int | None,
        delivered_at: float | None,
        updated_at: float,
    ) -> None:
        await self._run(
            self.q.update_outbox,
            (
                status,
                attempts,
                next_attempt_at,
                last_error,
                last_status_code,
                delivered_at,
                updated_at,
                outbox_id,
            ),
        )

    async def cancel_outbox_for_webhook(self, webhook_id: str, now: float) -> None:
        await self._run(self.q.cancel_outbox_for_webhook, (now, webhook_id))

    async def list_outbox(self, account_id: str, limit: int) -> list[OutboxRecord]:
        return [
            rows.outbox(row) for row in await self._all(self.q.list_outbox, (account_id, limit))
        ]

    # -- idempotency ------------------------------------------------------------------------
    async def get_idempotency(self, account_id: str, key: str) -> IdempotencyRecord | None:
        row = await self._one(self.q.get_idempotency, (account_id, key))
        return rows.idempotency(row) if row else None

    async def put_idempotency(self, record: IdempotencyRecord) -> None:
        await self._run(self.q.put_idempotency, rows.idempotency_values(record))

    async def get_idempotency_link(self, account_id: str, key: str) -> IdempotencyLinkRecord | None:
        row = await self._one(self.q.get_idempotency_link, (account_id, key))
        return rows.idempotency_link(row) if row else None

    async def get_idempotency_state(
        self, account_id: str, key: str
    ) -> tuple[IdempotencyRecord | None, IdempotencyLinkRecord | None]:
        row = await self._one(self.q.get_idempotency_state, (account_id, key, account_id, key))
        assert row is not None  # the join of nothing with one row is that row
        stored = link = None
        if row[0] is not None:
            stored = rows.idempotency((account_id, key, *row[0:4]))
        if row[4] is not None:
            link = rows.idempotency_link((account_id, key, *row[4:7]))
        return stored, link

    async def delete_idempotency_before(self, cutoff: float) -> None:
        async with self._tx(2) as tx:
            await tx.execute(self.q.delete_idempotency_before, (cutoff,))
            await tx.execute(self.q.delete_idempotency_links_before, (cutoff,))

    # -- the audit log ----------------------------------------------------------------------
    async def append_audit(
        self, account_id: str, drafts: Sequence[AuditDraft]
    ) -> list[AuditRecord]:
        from ...approvals.audit import GENESIS

        if not drafts:
            return []
        q = self.q
        async with self._transaction() as tx:
            await tx.execute(q.start_audit_head, (account_id, GENESIS))
            head = await tx.one(q.lock_audit_head, (account_id,))
            assert head is not None  # made by the statement before, in this transaction
            sequence, prev = int(head[0]), str(head[1])
            records = []
            for draft in drafts:
                sequence += 1
                record = rows.chained_audit(account_id, sequence, prev, draft)
                records.append(record)
                prev = record.hash
            await tx.executemany(q.insert_audit, [rows.audit_values(r) for r in records])
            await tx.execute(q.set_audit_head, (sequence, prev, account_id))
        return records

    async def audit_after(self, account_id: str, after: int, limit: int) -> list[AuditRecord]:
        found = await self._all(self.q.audit_after, (account_id, after, limit))
        return [rows.audit(row) for row in found]

    async def audit_of(self, interaction_id: str) -> list[AuditRecord]:
        found = await self._all(self.q.audit_of, (interaction_id,))
        return [rows.audit(row) for row in found]

    async def audit_seen_by(self, query: AuditQuery) -> list[AuditRecord]:
        q = self.q
        before = query.before if query.before is not None else 2**62
        text = q.audit_seen_by
        params: list[Any] = [query.account_id, before, query.account_id, query.person_id]
        params.append(query.account_id)
        if query.interaction_id is not None:
            text += q.audit_seen_by_interaction
            params.append(query.interaction_id)
        if query.action_name is not None:
            text += q.audit_seen_by_action_name
            params += [query.account_id, query.action_name, query.account_id, query.action_name]
        if query.since is not None:
            text += q.audit_seen_by_since
            params.append(query.since)
        if query.until is not None:
            text += q.audit_seen_by_until
            params.append(query.until)
        params.append(query.limit)
        found = await self._all(text + q.audit_seen_by_end, params)
        return [rows.audit(row) for row in found]

    async def audit_head(self, account_id: str) -> tuple[int, str] | None:
        row = await self._one(self.q.audit_head, (account_id,))
        return (int(row[0]), str(row[1])) if row else None

    async def audit_heads(self) -> dict[str, tuple[int, str]]:
        return {str(r[0]): (int(r[1]), str(r[2])) for r in await self._all(self.q.audit_heads)}

    async def audit_accounts(self) -> list[str]:
        return [str(row[0]) for row in await self._all(self.q.audit_accounts)]

    async def insert_audit_checkpoint(self, checkpoint: Checkpoint) -> bool:
        changed = await self._run(
            self.q.insert_audit_checkpoint, rows.checkpoint_values(checkpoint)
        )
        return changed > 0

    async def audit_checkpoints(self, account_id: str) -> list[Checkpoint]:
        found = await self._all(self.q.audit_checkpoints, (account_id,))
        return [rows.checkpoint(row) for row in found]

    async def unsigned_audit_heads(
        self,
    ) -> list[tuple[str, tuple[int, str], tuple[int, str] | None]]:
        return [
            (
                str(r[0]),
                (int(r[1]), str(r[2])),
                None if r[3] is None else (int(r[3]), str(r[4])),
            )
            for r in await self._all(self.q.unsigned_audit_heads)
        ]

    # -- approval requests --------------------------------------------------------------------
    async def insert_approval(
        self, record: ApprovalRecord, approvers: Sequence[ApproverRecord]
    ) -> None:
        q = self.q
        async with self._transaction() as tx:
            await tx.execute(q.insert_approval, rows.approval_values(record))
            await tx.executemany(q.insert_approver, [rows.approver_values(a) for a in approvers])

    async def get_approval(self, interaction_id: str) -> ApprovalRecord | None:
        row = await self._one(self.q.get_approval, (interaction_id,))
        return rows.approval(row) if row else None

    async def list_approvals(self, query: ApprovalQuery) -> list[ListedApproval]:
        q = self.q
        text = q.list_approvals
        params: list[Any] = [query.account_id, query.after]
        for condition, value in (
            (q.list_approvals_status, query.status),
            (q.list_approvals_decision, query.decision),
            (q.list_approvals_action_name, query.action_name),
            (q.list_approvals_person_id, query.person_id),
        ):
            if value is not None:
                text += condition
                params.append(value)
        for key, value in query.metadata:
            text += q.list_approvals_metadata
            params += [key, value]
        params.append(query.limit)
        found = await self._all(text + q.list_approvals_end, params)
        return [ListedApproval(int(row[0]), rows.interaction(row[1:])) for row in found]

    async def approvers_of(self, interaction_id: str) -> list[ApproverRecord]:
        return [rows.approver(r) for r in await self._all(self.q.approvers_of, (interaction_id,))]

    async def approver_by_token(self, token: str) -> ApproverRecord | None:
        row = await self._one(self.q.approver_by_token, (token,))
        return rows.approver(row) if row else None

    async def open_approvers_at(self, channel: str, to_addr: str) -> list[ApproverRecord]:
        found = await self._all(self.q.open_approvers_at, (to_addr, channel))
        return [rows.approver(r) for r in found]

    async def mark_approvers_asked(
        self, interaction_id: str, positions: Sequence[int], at: float
    ) -> None:
        if positions:
            async with self._transaction() as tx:
                await tx.executemany(
                    self.q.mark_approver_asked, [(at, interaction_id, p) for p in positions]
                )

    async def add_approver_reminder(self, interaction_id: str, position: int) -> None:
        await self._run(self.q.add_approver_reminder, (interaction_id, position))

    async def record_approver_decision(
        self,
        interaction_id: str,
        position: int,
        decision: ApprovalDecision,
        comment: str | None,
        via: str,
        at: float,
    ) -> bool:
        params = (decision, comment, via, at, interaction_id, position)
        return await self._run(self.q.record_approver_decision, params) > 0

    async def claim_approval(self, record: ClaimRecord) -> ClaimRecord | None:
        await self._run(
            self.q.insert_claim,
            (record.interaction_id, record.account_id, record.person_id, record.claimed_at),
        )
        return await self.get_claim(record.interaction_id)

    async def get_claim(self, interaction_id: str) -> ClaimRecord | None:
        row = await self._one(self.q.get_claim, (interaction_id,))
        return rows.claim(row) if row else None

    async def release_claim(self, interaction_id: str, person_id: str) -> bool:
        return await self._run(self.q.release_claim, (interaction_id, person_id)) > 0

    async def reassign_approver(self, change: Reassignment) -> bool:
        params = (
            change.person_id,
            change.channel,
            change.to_addr,
            change.token,
            change.code,
            change.on_behalf_of,
            change.interaction_id,
            change.position,
            change.from_person,
        )
        return await self._run(self.q.reassign_approver, params) > 0

    async def settle_approval(
        self, interaction_id: str, outcome: ApprovalOutcome | None, timed_out: bool, at: float
    ) -> bool:
        params = (outcome, 1 if timed_out else 0, at, interaction_id)
        return await self._run(self.q.settle_approval, params) > 0

    async def consume_approval(self, interaction_id: str, at: float) -> bool:
        return await self._run(self.q.consume_approval, (at, interaction_id)) > 0

    # -- the schedule -----------------------------------------------------------------------
    async def put_steps(
        self, steps: Sequence[StepRecord], claimed_by: str | None, claimed_until: float | None
    ) -> None:
        if not steps:
            return
        values = [rows.step_values(step, claimed_by, claimed_until) for step in steps]
        if len(values) == 1:
            await self._run(self.q.put_step, values[0])
            return
        async with self._tx(1) as tx:
            await tx.executemany(self.q.put_step, values)

    async def cancel_step(self, kind: str, key: str) -> None:
        await self._run(self.q.cancel_step, (kind, key))

    async def claim_steps(
        self, owner: str, *, due_before: float, now: float, lease: float, limit: int
    ) -> list[StepRecord]:
        params = (owner, now, lease, due_before, now, limit)
        return [rows.step(row) for row in await self._all(self.q.claim_steps, params)]

    async def finish_step(self, step: StepRecord) -> bool:
        return await self._run(self.q.finish_step, (step.kind, step.key, step.due_at)) > 0

    async def retry_step(self, step: StepRecord, due_at: float) -> None:
        await self._run(self.q.retry_step, (due_at, step.kind, step.key, step.due_at))

    async def release_steps(self, owner: str) -> None:
        await self._run(self.q.release_steps, (owner,))

    async def get_step(self, kind: str, key: str) -> StepRecord | None:
        row = await self._one(self.q.get_step, (kind, key))
        return rows.step(row) if row else None

    async def count_steps(self) -> int:
        row = await self._one(self.q.count_steps)
        return int(row[0]) if row else 0
