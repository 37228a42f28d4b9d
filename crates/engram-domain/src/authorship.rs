//! Who a write is by: the author the transport names for a call (a token's label, an OAuth
//! subject, `local` on stdio), held for the call's task, which the stores record on the write's
//! events and `get_history` shows beside each entry (issue "Team memory", item 5). Never part
//! of a search result.

use std::future::Future;
use std::sync::Arc;

/// Characters of an author kept at most; a longer name is cut at a character boundary.
pub const AUTHOR_CHARS: usize = 200;

/// `author` as it is recorded: without control characters (which no store need quote, and
/// PostgreSQL's text cannot hold NUL), its first [`AUTHOR_CHARS`] characters.
pub(crate) fn recorded(author: &str) -> Arc<str> {
    let kept: String = (author.chars().filter(|c| !c.is_control()))
        .take(AUTHOR_CHARS)
        .collect();
    Arc::from(kept)
}

tokio::task_local! {
    static AUTHOR: Arc<str>;
}

/// Runs `body` with `author` as the author of every write it makes.
pub async fn scope<T>(author: &str, body: impl Future<Output = T>) -> T {
    AUTHOR.scope(recorded(author), body).await
}

/// The author of the calling task's writes, when a transport named one.
pub fn current() -> Option<Arc<str>> {
    AUTHOR.try_with(Arc::clone).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_author_holds_within_its_scope_only() {
        assert_eq!(current(), None);
        let inside = scope("alice", async { current() }).await;
        assert_eq!(inside.as_deref(), Some("alice"));
        assert_eq!(current(), None);
        let long = "é".repeat(AUTHOR_CHARS + 5);
        let cut = scope(&long, async { current() }).await.unwrap();
        assert_eq!(cut.chars().count(), AUTHOR_CHARS);
        let controlled = scope("bob\0\n's", async { current() }).await;
        assert_eq!(controlled.as_deref(), Some("bob's"));
    }
}
