//! Who a write is by ([`engram_domain::authorship`]): [`setting`] sets it on the write's
//! transaction, where the events it records take it as their `author` (migration V14).

/// The statement that sets the calling task's author, when it has one, as `engram.author`
/// for the transaction only (`set_config(…, true)`), which `events.author` defaults to. A
/// literal, not a parameter: it travels in the transaction's one batch of settings
/// ([`crate::PgStore::begun`]), with no statement prepared (a pooler's server connection keeps
/// none).
pub(crate) fn setting() -> Option<String> {
    let author = engram_domain::authorship::current()?;
    Some(format!(
        "SELECT set_config('engram.author', {}, true)",
        literal(&author)
    ))
}

/// `text` as an escape string constant (`E'…'`), which means the same whatever
/// `standard_conforming_strings` says. The domain keeps control characters (NUL among them)
/// out of an author.
fn literal(text: &str) -> String {
    format!("E'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_author_is_quoted_as_an_escape_string() {
        assert_eq!(literal("alice"), "E'alice'");
        assert_eq!(literal(r"o'brien\'); --"), r"E'o''brien\\''); --'");
    }
}
