"""Approval requests on the service: the tally that decides one (``tally``), the
account's hash-chained audit log (``audit``) and the signed checkpoints that anchor it
(``checkpoints``). All are plain functions of what the store holds, so the engine, the CLI
(``humanwire audit verify``) and the tests share them."""
