-- A revoked token is kept, marked with when it was revoked (microseconds since the Unix
-- epoch), so `engram token list` can show it as revoked; it grants nothing from that moment.
ALTER TABLE tokens ADD COLUMN revoked_at INTEGER;
