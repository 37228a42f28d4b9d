use std::sync::Arc;

use super::*;
use crate::{
    AccessBatch, AccessLog, AccessRanking, GetStats, Memory, MemoryStore, SearchMode, SearchNodes,
    WorkspaceId,
};

/// Ada, Bo and Cy, each with one fact about the harbour; the memory notes its reads in a log.
async fn harbour(store: Arc<dyn MemoryStore>) -> (Memory, AccessLog, WorkspaceId) {
    let log = AccessLog::default();
    let (memory, ws) = memory_with_workspace(store, "harbour").await;
    let memory = memory.with_access_log(log.clone());
    let entities = vec![
        entity("Ada", "person", &["Ada watches the harbour lights"]),
        entity("Bo", "person", &["Bo watches the harbour boats"]),
        entity("Cy", "person", &["Cy sells fish"]),
    ];
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    (memory, log, ws)
}

fn names(values: &[&str]) -> Vec<String> {
    strings(values)
}

pub async fn reads_are_noted_and_written_apart_from_the_graph(store: Arc<dyn MemoryStore>) {
    let (memory, log, ws) = harbour(store.clone()).await;
    let other = memory.create_workspace("elsewhere").await.unwrap().id;
    create_nodes(&memory, other, &["Dee"]).await;
    assert!(log.take().is_empty(), "writes are not reads");
    (memory.call(ws, OpenNodes::new(&names(&["Ada", "Bo", "Nobody"]))))
        .await
        .unwrap();
    let search = SearchNodes::new("harbour").mode(SearchMode::Text);
    let found = memory.call(ws, search).await.unwrap();
    assert_eq!(found.results.len(), 2);
    memory
        .call(other, OpenNodes::new(&names(&["Dee"])))
        .await
        .unwrap();
    let batch = log.take();
    let reads = &batch.workspaces[&ws].reads;
    assert_eq!((reads["Ada"], reads["Bo"]), (2, 2), "{reads:?}");
    assert!(!reads.contains_key("Cy") && !reads.contains_key("Nobody"));
    let together = &batch.workspaces[&ws].together;
    assert_eq!(together[&("Ada".to_owned(), "Bo".to_owned())], 2);

    // Written in one call: counts and pairs, a node of another workspace left alone, and
    // nothing a write would leave (no event, no `updated_at`).
    let before = (
        memory.call(ws, GetStats {}).await.unwrap(),
        open_node(&memory, ws, "Ada").await,
    );
    let events = events(&memory, ws).await;
    let mut stray = batch.clone();
    stray
        .workspaces
        .get_mut(&ws)
        .unwrap()
        .reads
        .insert("Dee".into(), 5);
    memory.record_access(&stray).await.unwrap();
    memory.record_access(&batch).await.unwrap();
    let used = store
        .node_use(ws, &names(&["Ada", "Bo", "Cy", "Dee"]), "Ada")
        .await
        .unwrap();
    let mut used: Vec<(String, i64, i64)> = used
        .into_iter()
        .map(|u| (u.name, u.reads, u.together))
        .collect();
    used.sort();
    assert_eq!(used, [("Ada".into(), 4, 0), ("Bo".into(), 4, 4)]);
    // Dee's one read counts in its own workspace only (the stray five went nowhere).
    let dee = store
        .node_use(other, &names(&["Dee"]), "Dee")
        .await
        .unwrap();
    assert_eq!(dee.iter().map(|u| u.reads).collect::<Vec<_>>(), [2]);
    assert_eq!(
        events,
        super::events(&memory, ws).await,
        "a read is no event"
    );
    let after = (
        memory.call(ws, GetStats {}).await.unwrap(),
        open_node(&memory, ws, "Ada").await,
    );
    assert_eq!(
        before.1.updated_at, after.1.updated_at,
        "a read changes no node"
    );
    assert_eq!(before.0.node_count, after.0.node_count);
    // An empty batch writes nothing and costs nothing.
    memory.record_access(&AccessBatch::default()).await.unwrap();
    // A merge adds the source's reads to the target's.
    (memory.call(ws, crate::MergeEntities::new(&names(&["Bo"]), "Ada")))
        .await
        .unwrap();
    let merged = store.node_use(ws, &names(&["Ada"]), "Ada").await.unwrap();
    assert_eq!(merged.iter().map(|u| u.reads).collect::<Vec<_>>(), [8]);
}

pub async fn stale_nodes_are_unwritten_and_rarely_read(store: Arc<dyn MemoryStore>) {
    let (memory, _, ws) = harbour(store.clone()).await;
    let later = chrono::Utc::now() + chrono::Duration::hours(1);
    // Nothing is written after `later`: every node is stale until read since.
    let stale = |limit| {
        let store = store.clone();
        async move {
            let nodes = store.stale_nodes(ws, later, limit).await.unwrap();
            nodes
                .into_iter()
                .map(|n| (n.name, n.reads))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(stale(10).await.len(), 3);
    assert_eq!(
        stale(1).await.len(),
        2,
        "one more than the limit, to tell a cut"
    );
    // Ada read often after `later`: fresh. Bo read after it but only twice: still stale.
    let mut batch = AccessBatch {
        at: later + chrono::Duration::hours(1),
        ..AccessBatch::default()
    };
    let access = batch.workspaces.entry(ws).or_default();
    access.reads.insert("Ada".into(), 3);
    access.reads.insert("Bo".into(), 2);
    memory.record_access(&batch).await.unwrap();
    let mut left = stale(10).await;
    left.sort();
    assert_eq!(left, [("Bo".into(), 2), ("Cy".into(), 0)]);
    // The report asks for nodes unwritten for a day: none yet, and the key is left out.
    let report = (memory.call(ws, crate::GetConsolidationReport::default()))
        .await
        .unwrap();
    assert!(report.stale_nodes.is_empty());
    let bad = crate::GetConsolidationReport {
        stale_days: 0,
        ..crate::GetConsolidationReport::default()
    };
    let refused = memory.call(ws, bad).await.unwrap_err();
    assert!(refused.to_string().contains("stale_days"), "{refused}");
}

pub async fn ranking_by_use_lifts_what_is_read_among_equals(store: Arc<dyn MemoryStore>) {
    let (plain, _, ws) = harbour(store.clone()).await;
    // Each holds the same two words of the question: an equal score below 1, which use moves.
    let search = || SearchNodes::new("who watched the harbour at night").mode(SearchMode::Text);
    let first = |found: crate::SearchResults| found.results[0].name.clone();
    let unused = plain.call(ws, search()).await.unwrap();
    assert_eq!(first(unused.clone()), "Ada", "equals by name: {unused:?}");
    let mut batch = AccessBatch {
        at: chrono::Utc::now(),
        ..AccessBatch::default()
    };
    (batch.workspaces.entry(ws).or_default().reads).insert("Bo".into(), 50);
    plain.record_access(&batch).await.unwrap();
    assert_eq!(
        first(plain.call(ws, search()).await.unwrap()),
        "Ada",
        "off by default"
    );
    let ranked = plain.clone().with_access_ranking(AccessRanking::default());
    let used = ranked.call(ws, search()).await.unwrap();
    assert_eq!(first(used.clone()), "Bo", "{used:?}");
    assert!(
        used.results[0].score > unused.results[0].score,
        "{used:?} {unused:?}"
    );
}
