"""The ``[audit]`` section: the audit log's signed checkpoints."""

from __future__ import annotations

from typing import Annotated

from pydantic import (
    AfterValidator,
    SecretStr,
)

from ...config import (
    ServiceConfig,
)
from .checks import _about, _seconds, _signing_key, _Strict

__all__ = ["AuditSettings"]


class AuditSettings(_Strict):
    """Signed checkpoints of the accounts' audit logs (docs/operating/security.md, "The
    audit log")."""

    signing_key: Annotated[
        Annotated[SecretStr, AfterValidator(_signing_key)] | None,
        _about(
            "The Ed25519 key audit checkpoints are signed with: base64 of its 32-byte seed "
            "(`humanwire audit keygen` makes one). Keep it out of the database's reach (the "
            "environment, a secret store); unset: no checkpoints. Needs `humanwire[audit]`."
        ),
    ] = None
    checkpoint_every: Annotated[
        float,
        _seconds(86_400, low=1),
        _about(
            "Seconds between two checkpoints: each account's head is signed, stored and "
            "published as an `audit.checkpoint` event when it moved since the last one."
        ),
    ] = ServiceConfig.audit_checkpoint_every

    def problems(self) -> list[str]:
        from ...approvals.checkpoints import key_problem

        problem = key_problem() if self.signing_key is not None else None
        return [] if problem is None else [f"audit.signing_key: {problem}"]
