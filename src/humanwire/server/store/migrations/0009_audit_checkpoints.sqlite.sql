-- Schema 11: the signed checkpoints of the accounts' audit heads (docs/design.md, "The
-- audit chain anchored"): the head's sequence and hash, when, the public key and the
-- Ed25519 signature (base64), one per account and position.
CREATE TABLE IF NOT EXISTS audit_checkpoints (
    account_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    hash TEXT NOT NULL,
    at TEXT NOT NULL,
    public_key TEXT NOT NULL,
    signature TEXT NOT NULL,
    PRIMARY KEY (account_id, sequence)
);
