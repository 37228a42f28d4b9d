//! Who a write is by ([`engram_domain::authorship`]): [`record`] sets it on the write's
//! transaction, where the events it records take it as their `author` (migration V14).

use deadpool_postgres::Transaction;

use crate::error;
use engram_domain::Result;

/// Sets the calling task's author, when it has one, as `engram.author` for the transaction
/// only (`set_config(…, true)`), which `events.author` defaults to. One simple query: no
/// statement is prepared (a pooler's server connection keeps none) and nothing waits for a
/// second round trip.
pub(crate) async fn record(tx: &Transaction<'_>) -> Result<()> {
    if let Some(author) = engram_domain::authorship::current() {
        let set = format!(
            "SELECT set_config('engram.author', {}, true)",
            literal(&author)
        );
        tx.batch_execute(&set).await.map_err(error::db)?;
    }
    Ok(())
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
