-- Who wrote what: every event records the author of the transaction that wrote it, which the
-- writer connection holds for the transaction (`engram_author()`, set from the call's token
-- label, OAuth subject or `local`). NULL for events written before, or without one. (An added
-- column cannot default to an expression: a trigger fills it.)
ALTER TABLE events ADD COLUMN author TEXT;
CREATE TRIGGER events_author AFTER INSERT ON events
WHEN engram_author() IS NOT NULL
BEGIN
    UPDATE events SET author = engram_author() WHERE id = NEW.id;
END;
