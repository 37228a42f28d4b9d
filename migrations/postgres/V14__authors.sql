-- Who wrote what: every event records the author of the transaction that wrote it, which the
-- store sets for the transaction (`set_config('engram.author', …, true)`) from the call's
-- token label, OAuth subject or `local`. NULL for events written before, or without one.
ALTER TABLE events ADD COLUMN author text
    DEFAULT nullif(current_setting('engram.author', true), '');
