-- Schema 10: approvals listed (GET /approvals, docs/design.md "Approvals listed"). Each
-- request gets the position it is listed at (seq: the page cursor, from a sequence, so
-- replicas never hand out one twice) and its action's name (the actionName filter,
-- without reading every request's JSON); each approver a person_id (the personId filter:
-- null until approvers can be people).
ALTER TABLE approvals ADD COLUMN seq BIGSERIAL;
ALTER TABLE approvals ADD COLUMN action_name TEXT;
ALTER TABLE approval_approvers ADD COLUMN person_id TEXT;
UPDATE approvals SET action_name = i.request::jsonb -> 'action' ->> 'name'
FROM interactions i WHERE i.id = approvals.interaction_id;
CREATE UNIQUE INDEX approvals_listed ON approvals (account_id, seq);
CREATE INDEX approval_approvers_person ON approval_approvers (person_id);
