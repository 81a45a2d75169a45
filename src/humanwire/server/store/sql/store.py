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

On PostgreSQL each executor call is one round trip (``_transaction``'s statements aside),
and the round trips of a send and of an answer are pinned by tests: a method here makes
no call it does not need. How to add a column or a method: ``docs/explanation/stores.md``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Protocol

from ..base import (
    ACCOUNT_TABLES,
    AccountRecord,
    AccountUsage,
    ChannelRecord,
    DeliveryRecord,
    EventRecord,
    IdempotencyLinkRecord,
    IdempotencyRecord,
    InboundRecord,
    InboxSessionRecord,
    InteractionRecord,
    NumberRecord,
    OutboxRecord,
    WebhookRecord,
)
from . import rows
from .statements import Statements

__all__ = ["SQLStore", "Transaction"]

Row = tuple[Any, ...]


class Transaction(Protocol):
    """Statements run inside ``_tx`` / ``_transaction``."""

    def execute(self, query: str, params: Sequence[Any] = (), /) -> None: ...
    def executemany(self, query: str, params: Iterable[Sequence[Any]], /) -> None: ...
    def one(self, query: str, params: Sequence[Any] = (), /) -> Row | None:
        """The first row (``_transaction`` only: a ``_tx`` reads nothing on the way)."""
        ...

    def run(self, query: str, params: Sequence[Any] = (), /) -> int:
        """The rows the statement changed (``_transaction`` only)."""
        ...


class SQLStore:
    """The shared methods of ``Store``, on the executor a backend implements."""

    q: ClassVar[Statements]
    """The backend's statements, rendered for its database."""
    account_tables: ClassVar[tuple[str, ...]] = ACCOUNT_TABLES
    """Tables whose rows an account's deletion removes (by their ``account_id``)."""

    # -- the executor (each backend's) ----------------------------------------------------
    def _one(self, query: str, params: Sequence[Any] = ()) -> Row | None:
        raise NotImplementedError

    def _all(self, query: str, params: Sequence[Any] = ()) -> list[Row]:
        raise NotImplementedError

    def _run(self, query: str, params: Sequence[Any] = ()) -> int:
        raise NotImplementedError

    def _insert_id(self, query: str, params: Sequence[Any]) -> int:
        raise NotImplementedError

    def _tx(self, statements: int) -> AbstractContextManager[Transaction]:
        raise NotImplementedError

    def _transaction(self) -> AbstractContextManager[Transaction]:
        raise NotImplementedError

    # -- accounts ---------------------------------------------------------------------------
    def insert_account(self, record: AccountRecord) -> None:
        self._run(self.q.insert_account, rows.account_values(record))

    def account_by_key_hash(self, key_hash: str) -> AccountRecord | None:
        row = self._one(self.q.account_by_key_hash, (key_hash,))
        return rows.account(row) if row else None

    def get_account(self, account_id: str) -> AccountRecord | None:
        row = self._one(self.q.get_account, (account_id,))
        return rows.account(row) if row else None

    def set_account_suspended(self, account_id: str, suspended: bool) -> None:
        self._run(self.q.set_account_suspended, (bool(suspended), account_id))

    def count_accounts(self) -> int:
        row = self._one(self.q.count_accounts)
        return int(row[0]) if row else 0

    def list_accounts(self) -> list[AccountRecord]:
        return [rows.account(row) for row in self._all(self.q.list_accounts)]

    def account_usage(self) -> dict[str, AccountUsage]:
        q = self.q
        return rows.usage_from_counts(
            self._all(q.interactions_per_account),
            {
                "numbers": self._all(q.numbers_per_account),
                "webhooks": self._all(q.webhooks_per_account),
                "channels": self._all(q.channels_per_account),
            },
        )

    def set_account_key_hash(self, account_id: str, key_hash: str) -> bool:
        return self._run(self.q.set_account_key_hash, (key_hash, account_id)) > 0

    def delete_account(self, account_id: str) -> dict[str, int] | None:
        with self._transaction() as tx:
            return self._delete_account_rows(tx, account_id)

    def _delete_account_rows(self, tx: Transaction, account_id: str) -> dict[str, int] | None:
        q = self.q
        # Locks the row where the database can (PostgreSQL): a concurrent rotate or
        # suspend waits, then finds nothing.
        if tx.one(q.account_to_delete, (account_id,)) is None:
            return None
        # Provider state names the account in its value (Slack installs, OAuth states)
        # or is keyed by one of its interactions (decisions) or numbers; a call's state
        # names its interaction. Deleted before those rows go.
        removed = {"provider_state": tx.run(q.delete_provider_state_of_account, (account_id,) * 4)}
        for table in self.account_tables:
            statement = q.render(f"DELETE FROM {table} WHERE account_id = ?")
            removed[table] = tx.run(statement, (account_id,))
        removed["accounts"] = tx.run(q.delete_account, (account_id,))
        return removed

    # -- the inbox's sessions ---------------------------------------------------------------
    def insert_inbox_session(self, record: InboxSessionRecord) -> None:
        self._run(self.q.insert_inbox_session, rows.inbox_session_values(record))

    def inbox_session(
        self, id_hash: str, now: float, idle_after: float
    ) -> tuple[InboxSessionRecord, AccountRecord] | None:
        row = self._one(self.q.inbox_session, (id_hash, now, idle_after))
        return rows.inbox_session(row) if row is not None else None

    def touch_inbox_session(self, id_hash: str, seen_at: float) -> None:
        self._run(self.q.touch_inbox_session, (seen_at, id_hash, seen_at))

    def delete_inbox_session(self, id_hash: str) -> bool:
        return self._run(self.q.delete_inbox_session, (id_hash,)) > 0

    def prune_inbox_sessions(self, now: float, idle_after: float) -> int:
        return self._run(self.q.prune_inbox_sessions, (now, idle_after))

    # -- interactions -----------------------------------------------------------------------
    def _interaction_by(self, query: str, params: Sequence[Any]) -> InteractionRecord | None:
        row = self._one(query, params)
        return rows.interaction(row) if row else None

    def get_interaction(self, interaction_id: str) -> InteractionRecord | None:
        return self._interaction_by(self.q.get_interaction, (interaction_id,))

    def interaction_by_form_token(self, token: str) -> InteractionRecord | None:
        return self._interaction_by(self.q.interaction_by_form_token, (token,))

    def interaction_by_reply_token(self, token: str) -> InteractionRecord | None:
        return self._interaction_by(self.q.interaction_by_reply_token, (token,))

    def interaction_by_provider_ref(self, provider_ref: str) -> InteractionRecord | None:
        return self._interaction_by(self.q.interaction_by_provider_ref, (provider_ref,))

    def latest_open_message(
        self, account_id: str | None, channel: str, to_addr: str, from_addr: str
    ) -> InteractionRecord | None:
        if account_id is None:
            return self._interaction_by(
                self.q.latest_open_message_of_anyone, (channel, to_addr, from_addr)
            )
        return self._interaction_by(
            self.q.latest_open_message, (account_id, channel, to_addr, from_addr)
        )

    def open_interactions(self) -> list[InteractionRecord]:
        return [rows.interaction(row) for row in self._all(self.q.open_interactions)]

    def list_interactions(self, account_id: str, limit: int) -> list[InteractionRecord]:
        found = self._all(self.q.list_interactions, (account_id, limit))
        return [rows.interaction(row) for row in found]

    def end_interaction(
        self,
        interaction_id: str,
        ended_at: float,
        result: dict[str, Any] | None = None,
        outcome: str | None = None,
    ) -> bool:
        result_text = rows.dumps_json(result) if result is not None else None
        params = (ended_at, result_text, outcome, interaction_id)
        return self._run(self.q.end_interaction, params) > 0

    def set_delivery(
        self, interaction_id: str, delivery_status: str, provider_ref: str | None = None
    ) -> None:
        if provider_ref is None:
            self._run(self.q.set_delivery, (delivery_status, interaction_id))
        else:
            self._run(self.q.set_delivery_and_ref, (delivery_status, provider_ref, interaction_id))

    # -- what real providers keep between callbacks -------------------------------------------
    def get_provider_state(self, scope: str, key: str) -> dict[str, Any] | None:
        row = self._one(self.q.get_provider_state, (scope, key))
        if row is None:
            return None
        value = json.loads(row[0])
        assert isinstance(value, dict)
        return value

    def put_provider_state(
        self, scope: str, key: str, value: dict[str, Any], updated_at: float
    ) -> None:
        self._run(self.q.put_provider_state, (scope, key, rows.dumps_json(value), updated_at))

    def provider_states(self, scope: str) -> list[tuple[str, dict[str, Any]]]:
        found = self._all(self.q.provider_states, (scope,))
        return [(str(row[0]), json.loads(row[1])) for row in found]

    def delete_provider_state(self, scope: str, key: str) -> None:
        self._run(self.q.delete_provider_state, (scope, key))

    def delete_provider_state_before(self, scope: str, cutoff: float) -> None:
        self._run(self.q.delete_provider_state_before, (scope, cutoff))

    # -- the outcome stream ---------------------------------------------------------------------
    def outcomes_after(
        self, account_id: str, after: int, limit: int
    ) -> list[tuple[int, dict[str, Any]]]:
        found = self._all(self.q.outcomes_after, (account_id, after, limit))
        return [(int(row[0]), json.loads(row[1])) for row in found]

    def last_outcome_id(self) -> int:
        row = self._one(self.q.last_outcome_id)
        return int(row[0]) if row and row[0] is not None else 0

    def delete_outcomes_before(self, cutoff: float) -> None:
        self._run(self.q.delete_outcomes_before, (cutoff,))

    # -- deliveries and inbound messages ----------------------------------------------------
    def insert_delivery(
        self,
        *,
        id: str,
        account_id: str,
        interaction_id: str | None,
        channel: str,
        kind: str,
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
        seq = self._insert_id(self.q.insert_delivery, values)
        return rows.delivery((seq, *values))

    def list_deliveries(
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
        return [rows.delivery(row) for row in self._all(query + q.list_deliveries_end, params)]

    def delivery_seq(self, account_id: str, delivery_id: str) -> int | None:
        row = self._one(self.q.delivery_seq, (account_id, delivery_id))
        return int(row[0]) if row else None

    def max_delivery_seq(self, account_id: str) -> int:
        row = self._one(self.q.max_delivery_seq, (account_id,))
        return int(row[0]) if row and row[0] is not None else 0

    def insert_inbound(self, record: InboundRecord) -> None:
        self._run(self.q.insert_inbound, rows.inbound_values(record))

    def inbound_by_ref(self, ref: str) -> InboundRecord | None:
        row = self._one(self.q.inbound_by_ref, (ref,))
        return rows.inbound(row) if row else None

    def list_inbound(self, account_id: str, limit: int) -> list[InboundRecord]:
        return [rows.inbound(row) for row in self._all(self.q.list_inbound, (account_id, limit))]

    # -- numbers ----------------------------------------------------------------------------
    def insert_number(self, record: NumberRecord) -> None:
        self._run(self.q.insert_number, rows.number_values(record))

    def number_by_phone(self, phone_number: str) -> NumberRecord | None:
        row = self._one(self.q.number_by_phone, (phone_number,))
        return rows.number(row) if row else None

    def numbers_of(self, account_id: str) -> list[NumberRecord]:
        return [rows.number(row) for row in self._all(self.q.numbers_of, (account_id,))]

    def reserved_phone_numbers(self) -> set[str]:
        return {row[0] for row in self._all(self.q.reserved_phone_numbers)}

    def delete_number(self, account_id: str, number_id: str) -> bool:
        return self._run(self.q.delete_number, (number_id, account_id)) > 0

    # -- webhooks ---------------------------------------------------------------------------
    def insert_webhook(self, record: WebhookRecord) -> None:
        self._run(self.q.insert_webhook, rows.webhook_values(record))

    def webhooks_of(self, account_id: str) -> list[WebhookRecord]:
        return [rows.webhook(row) for row in self._all(self.q.webhooks_of, (account_id,))]

    def get_webhook(self, webhook_id: str) -> WebhookRecord | None:
        row = self._one(self.q.get_webhook, (webhook_id,))
        return rows.webhook(row) if row else None

    def delete_webhook(self, account_id: str, webhook_id: str) -> bool:
        return self._run(self.q.delete_webhook, (webhook_id, account_id)) > 0

    # -- channel cards ----------------------------------------------------------------------
    def insert_channel(self, record: ChannelRecord) -> None:
        self._run(self.q.insert_channel, rows.channel_values(record))

    def get_channel(self, account_id: str, channel_id: str) -> ChannelRecord | None:
        row = self._one(self.q.get_channel, (channel_id, account_id))
        return rows.channel(row) if row else None

    def channels_of(self, account_id: str) -> list[ChannelRecord]:
        return [rows.channel(row) for row in self._all(self.q.channels_of, (account_id,))]

    def delete_channel(self, account_id: str, channel_id: str) -> bool:
        return self._run(self.q.delete_channel, (channel_id, account_id)) > 0

    # -- events and the outbox ------------------------------------------------------------------
    def insert_event(self, record: EventRecord, outbox: list[OutboxRecord]) -> None:
        with self._tx(1 + len(outbox)) as tx:
            tx.execute(self.q.insert_event, rows.event_values(record))
            if outbox:
                tx.executemany(self.q.insert_outbox, [rows.outbox_values(o) for o in outbox])

    def get_event(self, event_id: str) -> EventRecord | None:
        row = self._one(self.q.get_event, (event_id,))
        return rows.event(row) if row else None

    def list_events(self, account_id: str, limit: int) -> list[EventRecord]:
        return [rows.event(row) for row in self._all(self.q.list_events, (account_id, limit))]

    def next_outbox_due(self) -> float | None:
        row = self._one(self.q.next_outbox_due)
        return float(row[0]) if row and row[0] is not None else None

    def outbox_depth(self) -> int:
        row = self._one(self.q.outbox_depth)
        return int(row[0]) if row else 0

    def update_outbox(
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
        self._run(
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

    def cancel_outbox_for_webhook(self, webhook_id: str, now: float) -> None:
        self._run(self.q.cancel_outbox_for_webhook, (now, webhook_id))

    def list_outbox(self, account_id: str, limit: int) -> list[OutboxRecord]:
        return [rows.outbox(row) for row in self._all(self.q.list_outbox, (account_id, limit))]

    # -- idempotency ------------------------------------------------------------------------
    def get_idempotency(self, account_id: str, key: str) -> IdempotencyRecord | None:
        row = self._one(self.q.get_idempotency, (account_id, key))
        return rows.idempotency(row) if row else None

    def put_idempotency(self, record: IdempotencyRecord) -> None:
        self._run(self.q.put_idempotency, rows.idempotency_values(record))

    def get_idempotency_link(self, account_id: str, key: str) -> IdempotencyLinkRecord | None:
        row = self._one(self.q.get_idempotency_link, (account_id, key))
        return rows.idempotency_link(row) if row else None

    def delete_idempotency_before(self, cutoff: float) -> None:
        with self._tx(2) as tx:
            tx.execute(self.q.delete_idempotency_before, (cutoff,))
            tx.execute(self.q.delete_idempotency_links_before, (cutoff,))
