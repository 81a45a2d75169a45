"""Approval requests on the service: the tally that decides one (``tally``) and the
account's hash-chained audit log (``audit``). Both are plain functions of what the store
holds, so the engine, the CLI (``humanwire audit verify``) and the tests share them."""
