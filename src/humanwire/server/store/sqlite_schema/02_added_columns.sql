-- Columns added after the first release (schema 3: a provider's delivery status and ref,
-- an inbound message's ref; schema 4: a channel card's metadata). New files have them
-- from 01_tables.sql; SQLite has no ADD COLUMN IF NOT EXISTS, so each ALTER TABLE runs
-- only where its column is missing.
ALTER TABLE interactions ADD COLUMN delivery_status TEXT;
ALTER TABLE interactions ADD COLUMN provider_ref TEXT;
ALTER TABLE inbound ADD COLUMN ref TEXT;
ALTER TABLE channels ADD COLUMN metadata TEXT;
