-- Chinese and Japanese found by full text: the `english` parser takes a run of such characters
-- (written without spaces) as one word, so a query shared no lexeme with the text it was
-- about. An observation is now indexed as its text followed by the character pairs of each
-- such run, and a query searched the same way (`text_query.rs`). The function must agree with
-- the domain's `search::words::with_cjk_bigrams` (SQLite calls that one: its V11): hiragana,
-- katakana (not the middle dot), 々, Han (extensions B and later too) and Hangul syllables; a
-- lone character stands for itself. Texts without such
-- characters are indexed as before.

CREATE FUNCTION engram_with_cjk(text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT CASE
        WHEN $1 !~ '[\u3005\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f]' THEN $1
        ELSE $1 || (
            SELECT string_agg(
                       ' ' || CASE WHEN length(r.run) = 1 THEN r.run ELSE substr(r.run, i, 2) END,
                       '' ORDER BY r.n, i)
            FROM (SELECT m.match[1] AS run, m.n
                  FROM regexp_matches(
                      $1, '([\u3005\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af\U00020000-\U0002fa1f]+)',
                      'g') WITH ORDINALITY AS m(match, n)) r,
                 generate_series(1, greatest(length(r.run) - 1, 1)) AS i)
    END
$$;

ALTER TABLE observations DROP COLUMN content_tsv;
ALTER TABLE observations ADD COLUMN content_tsv tsvector
    GENERATED ALWAYS AS (to_tsvector('english', engram_with_cjk(content))) STORED;
CREATE INDEX observations_tsv ON observations USING gin (content_tsv);
