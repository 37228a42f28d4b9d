//! Which store operations a task opened, noted where each store opens a transaction (or runs a
//! lone statement), so the conformance suite can pin what every tool costs without a wrapper
//! forwarding each trait method (`testsuite::calls`).
//!
//! A store calls [`opened`] with the type name of something defined in the trait method's
//! body (a closure, a local `fn`): its last named segment is the operation
//! (`engram_pg::nodes::<impl NodeStore for PgStore>::open_nodes::{{closure}}::here` is
//! `open_nodes`). Outside a [`recording`] task it costs one task-local lookup.

use std::cell::RefCell;

tokio::task_local! {
    static OPENED: RefCell<Vec<&'static str>>;
}

/// Notes that the operation whose body holds the item named `site` (from
/// [`std::any::type_name`]) opened a transaction; nothing unless the task is recording.
pub fn opened(site: &'static str) {
    let _ = OPENED.try_with(|opened| opened.borrow_mut().push(operation(site)));
}

/// The operation of `site`: its last segment that is neither an anonymous closure nor `here`,
/// without its generic arguments (`open_nodes<'_, '_>` is `open_nodes`).
fn operation(site: &'static str) -> &'static str {
    let segment = (site.rsplit("::"))
        .find(|segment| !segment.starts_with("{{") && *segment != "here")
        .unwrap_or(site);
    segment.split('<').next().unwrap_or(segment)
}

/// Runs `body`, noting every store operation it opens; [`take`] reads them.
#[cfg(feature = "testsuite")]
pub async fn recording<T>(body: impl Future<Output = T>) -> T {
    OPENED.scope(RefCell::new(Vec::new()), body).await
}

/// The operations opened since the last `take` in this [`recording`] task, in order.
#[cfg(feature = "testsuite")]
pub fn take() -> Vec<&'static str> {
    OPENED.with(|opened| opened.take())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operation_is_the_last_named_segment() {
        let pg = "engram_pg::nodes::<impl engram_domain::store::NodeStore for engram_pg::PgStore>\
                  ::open_nodes::{{closure}}::here";
        assert_eq!(operation(pg), "open_nodes");
        let sqlite = "engram_sqlite::nodes::<impl engram_domain::store::NodeStore for \
                      engram_sqlite::SqliteStore>::get_stats<'_, '_>::{{closure}}::{{closure}}";
        assert_eq!(operation(sqlite), "get_stats");
    }
}
