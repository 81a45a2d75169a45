-- Schema 10: approvals listed (GET /approvals, docs/design.md "Approvals listed"). Each
-- request gets the position it is listed at (seq: the page cursor, in the order requests
-- were made; rowid orders the rows written before) and its action's name (the actionName
-- filter, without reading every request's JSON); each approver a person_id (the personId
-- filter: null until approvers can be people).
ALTER TABLE approvals ADD COLUMN seq INTEGER;
ALTER TABLE approvals ADD COLUMN action_name TEXT;
ALTER TABLE approval_approvers ADD COLUMN person_id TEXT;
-- Safe to run again (a file of the old series runs every script again): the columns are
-- added only where missing, the rows without a place get one, the indexes if not there.
UPDATE approvals SET seq = rowid, action_name = (
    SELECT json_extract(i.request, '$.action.name') FROM interactions i
    WHERE i.id = approvals.interaction_id
) WHERE seq IS NULL;
CREATE UNIQUE INDEX IF NOT EXISTS approvals_listed ON approvals (account_id, seq);
CREATE INDEX IF NOT EXISTS approval_approvers_person ON approval_approvers (person_id);
