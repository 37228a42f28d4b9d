//! Input limits and the validation that enforces them.
//!
//! Every check names the argument as the caller wrote it (`entities[2].tags[0]`) and states the
//! limit, so a model reading the error can fix its call. Validation runs before any write, so a
//! rejected call changes nothing.

use std::collections::HashMap;

use crate::error::{Error, Result};
use crate::model::{Observation, RelationSpec, Timestamp};

/// Node names, entity types and relation types: bytes (UTF-8), inclusive.
pub const NAME_BYTES: std::ops::RangeInclusive<usize> = 1..=256;
/// Observation contents and summaries: bytes (UTF-8), inclusive.
pub const CONTENT_BYTES: std::ops::RangeInclusive<usize> = 1..=65_536;
/// Tags: bytes each, inclusive.
pub const TAG_BYTES: std::ops::RangeInclusive<usize> = 1..=128;
/// Tags on one node.
pub const MAX_TAGS: usize = 64;
/// Entities, relations, names, observation contents or deletions in one call.
pub const MAX_BATCH: usize = 1_000;
/// `get_neighborhood`'s `depth`, in hops, inclusive.
pub const DEPTH: std::ops::RangeInclusive<u32> = 0..=6;
/// `limit` of listing tools, inclusive.
pub const LIMIT: std::ops::RangeInclusive<u32> = 1..=1_000;
/// `get_recently_modified`'s `days`, inclusive.
pub const DAYS: std::ops::RangeInclusive<u32> = 1..=36_500;
/// The longest path `get_path` looks for, in hops.
pub const MAX_PATH_HOPS: u32 = 12;
/// The default time limit of one store call: waiting for a connection or a lock and running
/// its statements. A call past it fails as unavailable and changes nothing (its transaction
/// is rolled back); searches wait for the embedder within a budget of their own, well under it.
pub const CALL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
/// Workspace names: 1–64 characters of `A–Z a–z 0–9 . _ -`, so they travel safely in an HTTP
/// header and on a command line.
pub const WORKSPACE_NAME_CHARS: std::ops::RangeInclusive<usize> = 1..=64;

/// Checks a node name, entity type or relation type: 1–256 bytes, no control characters and
/// no invisible or bidirectional formatting characters (zero-width spaces and joiners, the
/// byte-order mark, the soft hyphen, bidi embeddings, overrides and isolates), which would let
/// two different names look the same.
pub fn name(field: &str, value: &str) -> Result<()> {
    text(field, value, NAME_BYTES)?;
    if let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(
            field,
            format!(
                "must not contain control characters (found U+{:04X})",
                c as u32
            ),
        ));
    }
    if let Some(c) = value.chars().find(|&c| invisible(c)) {
        return Err(Error::invalid(
            field,
            format!(
                "must not contain invisible or bidirectional formatting characters (found U+{:04X})",
                c as u32
            ),
        ));
    }
    Ok(())
}

/// Zero-width and bidirectional formatting characters, and other invisible ones.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// Checks an observation or a summary: 1–65,536 bytes, no NUL (U+0000), which PostgreSQL
/// cannot store in text.
pub fn content(field: &str, value: &str) -> Result<()> {
    text(field, value, CONTENT_BYTES)?;
    no_nul(field, value)
}

/// Checks a fact to store: its text as [`content`] (naming `field`), `valid_from` not in the
/// future and `expires_at` in the future (naming `field.valid_from`, `field.expires_at`).
pub fn fact(field: &str, fact: &crate::model::NewFact) -> Result<()> {
    let named = |part: &str| {
        if fact.is_plain() {
            field.to_owned()
        } else {
            format!("{field}.{part}")
        }
    };
    content(&named("content"), &fact.content)?;
    not_in_future(&named("valid_from"), fact.valid_from)?;
    let now = chrono::Utc::now();
    if let Some(expires) = fact.expires_at
        && expires <= now
    {
        return Err(Error::invalid(
            named("expires_at"),
            format!("must be in the future (it is {expires}, now is {now})"),
        ));
    }
    Ok(())
}

/// A node's tags with `added` after them, each once (`merge_entities`, `create_entities` with
/// `if_exists: "merge"`); [`Error::InvalidArgument`] naming `field` when that passes 64.
pub fn united_tags<'a>(
    field: &str,
    tags: &[String],
    added: impl IntoIterator<Item = &'a String>,
) -> Result<Vec<String>> {
    let mut united = tags.to_vec();
    for tag in added {
        if !united.contains(tag) {
            united.push(tag.clone());
        }
    }
    if united.len() > MAX_TAGS {
        return Err(Error::invalid(
            field,
            format!(
                "the node would have {} tags, more than {MAX_TAGS}",
                united.len()
            ),
        ));
    }
    Ok(united)
}

/// Refuses a `time` in the future, naming `field`.
pub fn not_in_future(field: &str, time: Option<Timestamp>) -> Result<()> {
    let now = chrono::Utc::now();
    match time {
        Some(time) if time > now => Err(Error::invalid(
            field,
            format!("must not be in the future (it is {time}, now is {now})"),
        )),
        _ => Ok(()),
    }
}

/// Refuses NUL (U+0000).
pub fn no_nul(field: &str, value: &str) -> Result<()> {
    if value.contains('\0') {
        return Err(Error::invalid(field, "must not contain NUL (U+0000)"));
    }
    Ok(())
}

/// Checks a tag list (at most 64 tags of 1–128 bytes, no control characters) and returns it
/// without duplicates, first occurrence kept.
pub fn tags(field: &str, tags: &[String]) -> Result<Vec<String>> {
    if tags.len() > MAX_TAGS {
        return Err(Error::invalid(
            field,
            format!("at most {MAX_TAGS} tags, got {}", tags.len()),
        ));
    }
    let mut unique: Vec<String> = Vec::with_capacity(tags.len());
    for (i, tag) in tags.iter().enumerate() {
        let tag_field = format!("{field}[{i}]");
        text(&tag_field, tag, TAG_BYTES)?;
        if tag.chars().any(char::is_control) {
            return Err(Error::invalid(
                tag_field,
                "must not contain control characters",
            ));
        }
        if !unique.contains(tag) {
            unique.push(tag.clone());
        }
    }
    Ok(unique)
}

/// Checks the length of a batch argument: 1–1,000 items.
pub fn batch<T>(field: &str, items: &[T]) -> Result<()> {
    if items.is_empty() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if items.len() > MAX_BATCH {
        return Err(Error::invalid(
            field,
            format!("at most {MAX_BATCH} items per call, got {}", items.len()),
        ));
    }
    Ok(())
}

/// Checks an observation ordinal: 1 or more.
pub fn ordinal(field: &str, ordinal: crate::Ordinal) -> Result<()> {
    if ordinal.0 < 1 {
        return Err(Error::invalid(
            field,
            format!("ordinals start at 1, got {ordinal}"),
        ));
    }
    Ok(())
}

/// The bytes of observation text one answer (`open_nodes`, a page of `read_graph` in full
/// detail) carries at most: 8 MiB, so that an answer (whose JSON carries each text twice, as
/// structured content and as its text twin) stays within what a session may leave unread.
/// The observation that passes it is left out, with every later one; the answer's `notice`
/// says where to read on.
pub const ANSWER_TEXT_BYTES: usize = 8 * 1024 * 1024;

/// How many of a list's rows (each `bytes` of text, in order) one answer carries within
/// [`ANSWER_TEXT_BYTES`]: the rows up to the one that would pass it, and always the first.
pub fn rows_within_answer(bytes: impl IntoIterator<Item = usize>) -> usize {
    let mut used = 0;
    let mut kept = 0;
    for row in bytes {
        used += row;
        if used > ANSWER_TEXT_BYTES && kept > 0 {
            break;
        }
        kept += 1;
    }
    kept
}

/// `notice` with `more` added after it (`"; "` between them).
pub fn add_notice(notice: &mut Option<String>, more: String) {
    *notice = Some(match notice.take() {
        Some(before) => format!("{before}; {more}"),
        None => more,
    });
}

/// The largest ordinal an imported record may give an observation: 2^53 − 1. Ordinals travel
/// as JSON numbers, which JavaScript reads exactly only up to this, and the observations
/// placed after the largest (one past it each) must still fit in an `i64`: without the bound,
/// an imported `i64::MAX` overflowed there.
pub const MAX_ORDINAL: i64 = (1 << 53) - 1;

/// Checks an ordinal that a record assigns (import): 1 to [`MAX_ORDINAL`].
pub fn assigned_ordinal(field: &str, ordinal: i64) -> Result<()> {
    counter(field, ordinal, MAX_ORDINAL)
}

/// Checks a node's ordinal counter that a record sets (import): 1 to [`MAX_ORDINAL`] + 1,
/// one past the largest ordinal.
pub fn ordinal_counter(field: &str, next: i64) -> Result<()> {
    counter(field, next, MAX_ORDINAL + 1)
}

fn counter(field: &str, value: i64, max: i64) -> Result<()> {
    if !(1..=max).contains(&value) {
        return Err(Error::invalid(
            field,
            format!("must be between 1 and {max}, got {value}"),
        ));
    }
    Ok(())
}

/// The instants a caller may give (token expiry, a report's start, imported times): years 1
/// to 9999, what RFC 3339 can write. chrono goes to ±262,143 years, PostgreSQL's
/// `timestamptz` only from 4713 BC to 294276 AD, and beyond it refused the call with an
/// internal error ("timestamp out of range").
pub const TIMESTAMPS: std::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;

/// Checks an instant: within years 1–9999 ([`TIMESTAMPS`], in seconds since the epoch).
pub fn timestamp(field: &str, value: chrono::DateTime<chrono::Utc>) -> Result<()> {
    if !TIMESTAMPS.contains(&value.timestamp()) {
        return Err(Error::invalid(
            field,
            format!(
                "must be within the years 1 to 9999, got {}",
                value.to_rfc3339()
            ),
        ));
    }
    Ok(())
}

/// Checks a bounded integer argument such as `depth`, `limit` or `days`.
pub fn within(field: &str, value: u32, range: std::ops::RangeInclusive<u32>) -> Result<()> {
    if !range.contains(&value) {
        return Err(Error::invalid(
            field,
            format!(
                "must be between {} and {}, got {value}",
                range.start(),
                range.end()
            ),
        ));
    }
    Ok(())
}

/// Checks a workspace name: 1–64 characters of `A–Z a–z 0–9 . _ -`.
pub fn workspace_name(field: &str, value: &str) -> Result<()> {
    let len = value.chars().count();
    if !WORKSPACE_NAME_CHARS.contains(&len) {
        return Err(Error::invalid(
            field,
            format!(
                "must be {}–{} characters, got {len}",
                WORKSPACE_NAME_CHARS.start(),
                WORKSPACE_NAME_CHARS.end()
            ),
        ));
    }
    if let Some(c) = value
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        return Err(Error::invalid(
            field,
            format!("may hold only letters, digits, '.', '_' and '-' (found {c:?})"),
        ));
    }
    Ok(())
}

pub(crate) fn text(field: &str, value: &str, bytes: std::ops::RangeInclusive<usize>) -> Result<()> {
    let len = value.len();
    if len < *bytes.start() {
        return Err(Error::invalid(field, "must not be empty"));
    }
    if len > *bytes.end() {
        return Err(Error::invalid(
            field,
            format!("at most {} bytes, got {len}", bytes.end()),
        ));
    }
    Ok(())
}

/// A list of node names: 1–1,000 names, each a valid name, named `field[i]` when not.
pub(crate) fn names_batch(field: &str, names: &[String]) -> Result<()> {
    batch(field, names)?;
    for (i, value) in names.iter().enumerate() {
        name(&format!("{field}[{i}]"), value)?;
    }
    Ok(())
}

/// A list of relations: 1–1,000, each endpoint and type a valid name.
pub(crate) fn relations_batch(relations: &[RelationSpec]) -> Result<()> {
    batch("relations", relations)?;
    for (i, relation) in relations.iter().enumerate() {
        name(
            &format!("relations[{i}].from_entity"),
            &relation.from_entity,
        )?;
        name(&format!("relations[{i}].to_entity"), &relation.to_entity)?;
        name(
            &format!("relations[{i}].relation_type"),
            &relation.relation_type,
        )?;
    }
    Ok(())
}

/// A call's items counted across its entries: at most [`MAX_BATCH`].
pub(crate) fn batch_total(field: &str, total: usize) -> Result<()> {
    if total > MAX_BATCH {
        return Err(Error::invalid(
            field,
            format!("at most {} items per call, got {total}", MAX_BATCH),
        ));
    }
    Ok(())
}

/// The indices of the first value that occurs twice: `(first, repeat)`.
pub(crate) fn first_duplicate<'a>(
    values: impl Iterator<Item = &'a String>,
) -> Option<(usize, usize)> {
    let mut seen = HashMap::new();
    for (i, value) in values.enumerate() {
        if let Some(first) = seen.insert(value, i) {
            return Some((first, i));
        }
    }
    None
}

/// The arguments that make a read see what `include_ended` and `as_of` saw, as JSON members
/// after a comma (empty for a read of what holds now).
fn read_options(include_ended: bool, as_of: Option<Timestamp>) -> String {
    match (include_ended, as_of) {
        (_, Some(as_of)) => format!(
            ", \"as_of\": \"{}\"",
            as_of.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
        ),
        (true, None) => ", \"include_ended\": true".to_owned(),
        (false, None) => String::new(),
    }
}

/// The `open_nodes` call that reads `name`'s observations after ordinal `after` as the cut
/// answer saw them (`include_ended`, `as_of`): what a notice suggests.
pub(crate) fn read_on_call(
    name: &str,
    after: i64,
    include_ended: bool,
    as_of: Option<Timestamp>,
) -> String {
    format!(
        "open_nodes {{\"names\": [{name:?}], \"after_ordinal\": {after}{}}}",
        read_options(include_ended, as_of)
    )
}

/// Where `observations` are cut so that an answer's text stays within `budget` bytes, `used`
/// bytes of it taken before them (counted on): the first observation that passes the
/// budget, never the answer's first (no node is unreadable).
pub(crate) fn cut_at(
    observations: &[Observation],
    used: &mut usize,
    budget: usize,
) -> Option<usize> {
    observations.iter().position(|o| {
        let first = *used == 0;
        *used += o.content.len();
        *used > budget && !first
    })
}

/// Most aliases a node has.
pub const MAX_ALIASES: usize = 64;

/// `aliases` checked as `set_aliases` checks them (at most 64 names, none `node`'s own), without
/// repeats; else [`Error::InvalidArgument`] naming `aliases` or `aliases[i]`.
pub(crate) fn aliases(node: &str, mut aliases: Vec<String>) -> Result<Vec<String>> {
    let most = MAX_ALIASES;
    if aliases.len() > most {
        return Err(Error::invalid(
            "aliases",
            format!("at most {most}, got {}", aliases.len()),
        ));
    }
    for (i, alias) in aliases.iter().enumerate() {
        let field = format!("aliases[{i}]");
        name(&field, alias)?;
        if alias == node {
            return Err(Error::invalid(field, "is the node's own name"));
        }
    }
    let mut seen = std::collections::HashSet::new();
    aliases.retain(|alias| seen.insert(alias.clone()));
    Ok(aliases)
}

/// What holding `alias` makes `holder`: "another node's name" when the alias is a node's
/// name, else "already an alias of {holder}" (`set_aliases`' error, import's notice).
pub(crate) fn held_by(alias: &str, holder: &str) -> String {
    match holder == alias {
        true => "another node's name".to_owned(),
        false => format!("already an alias of {holder}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(result: Result<()>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn an_answer_keeps_the_rows_within_its_text_budget_and_always_the_first() {
        let mib = 1024 * 1024;
        assert_eq!(rows_within_answer([mib; 20]), 8);
        assert_eq!(rows_within_answer([3 * mib, 5 * mib, 1]), 2);
        assert_eq!(rows_within_answer([9 * mib, 1]), 1);
        assert_eq!(rows_within_answer([]), 0);
        let mut notice = None;
        add_notice(&mut notice, "one".into());
        add_notice(&mut notice, "two".into());
        assert_eq!(notice.as_deref(), Some("one; two"));
    }

    #[test]
    fn names_are_bounded_and_printable() {
        assert!(name("name", "Alice").is_ok());
        assert!(name("name", &"é".repeat(128)).is_ok());
        assert_eq!(
            message(name("name", "")),
            "invalid argument `name`: must not be empty"
        );
        assert_eq!(
            message(name("entities[1].name", &"x".repeat(257))),
            "invalid argument `entities[1].name`: at most 256 bytes, got 257"
        );
        assert_eq!(
            message(name("name", "a\nb")),
            "invalid argument `name`: must not contain control characters (found U+000A)"
        );
    }

    #[test]
    fn tags_are_bounded_and_deduplicated() {
        let tags_in: Vec<String> = ["a", "b", "a"].map(String::from).to_vec();
        assert_eq!(tags("tags", &tags_in).unwrap(), ["a", "b"]);
        let too_many: Vec<String> = (0..65).map(|i| i.to_string()).collect();
        assert_eq!(
            tags("tags", &too_many).unwrap_err().to_string(),
            "invalid argument `tags`: at most 64 tags, got 65"
        );
        let too_long = vec!["t".repeat(129)];
        assert_eq!(
            tags("tags", &too_long).unwrap_err().to_string(),
            "invalid argument `tags[0]`: at most 128 bytes, got 129"
        );
    }

    #[test]
    fn bounded_integers_name_their_range() {
        assert!(within("depth", 6, DEPTH).is_ok());
        assert_eq!(
            message(within("depth", 7, DEPTH)),
            "invalid argument `depth`: must be between 0 and 6, got 7"
        );
        assert_eq!(
            message(within("limit", 0, LIMIT)),
            "invalid argument `limit`: must be between 1 and 1000, got 0"
        );
    }

    #[test]
    fn timestamps_are_years_1_to_9999() {
        use chrono::{DateTime, Utc};
        let at = |secs| DateTime::<Utc>::from_timestamp(secs, 0).unwrap();
        assert!(timestamp("since", at(*TIMESTAMPS.start())).is_ok());
        assert!(timestamp("since", at(*TIMESTAMPS.end())).is_ok());
        assert!(timestamp("since", at(TIMESTAMPS.start() - 1)).is_err());
        assert_eq!(
            message(timestamp("since", DateTime::<Utc>::MAX_UTC)),
            "invalid argument `since`: must be within the years 1 to 9999, got \
             +262142-12-31T23:59:59.999999999+00:00"
        );
    }

    #[test]
    fn workspace_names_are_header_safe() {
        assert!(workspace_name("workspace", "team-a.v2_x").is_ok());
        assert!(workspace_name("workspace", "has space").is_err());
        assert!(workspace_name("workspace", &"w".repeat(65)).is_err());
        assert!(workspace_name("workspace", "").is_err());
    }

    #[test]
    fn batches_hold_one_to_a_thousand() {
        assert!(batch("names", &[1]).is_ok());
        assert!(batch::<u8>("names", &[]).is_err());
        assert_eq!(
            message(batch("names", &vec![0; 1001])),
            "invalid argument `names`: at most 1000 items per call, got 1001"
        );
    }
}
