//! The inverted file over a large perspective's vectors: built, rebuilt as the perspective
//! grows, and searched with the exact answer's recall; vectors saved or deleted after a build
//! are found or gone.

use engram_domain::{CreateEntities, DeleteEntities};
use std::collections::HashSet;
use std::sync::Arc;

use engram_domain::testsuite::{TermEmbedder, entity, memory_with_workspace};
use engram_domain::{Indexer, Memory, SearchMode, SearchNodes, WorkspaceId};
use rusqlite::Connection;

/// Node `i`'s observation: three words of its topic (of 40) and a word of its own.
fn text(i: usize) -> String {
    let topic = i % 40;
    format!("topic{topic}a topic{topic}b topic{topic}c item{i}")
}

async fn nodes(memory: &Memory, workspace: WorkspaceId, range: std::ops::Range<usize>) {
    let nodes: Vec<_> = range
        .map(|i| entity(&format!("node-{i:04}"), "item", &[&text(i)]))
        .collect();
    memory
        .call(workspace, CreateEntities::new(nodes))
        .await
        .unwrap();
}

/// The names `query` finds in embedding mode, best first.
async fn found(memory: &Memory, workspace: WorkspaceId, query: &str) -> Vec<String> {
    let results = memory
        .call(
            workspace,
            SearchNodes::new(query)
                .mode(SearchMode::Embedding)
                .min_score(Some(0.0)),
        )
        .await
        .unwrap();
    results.results.into_iter().map(|hit| hit.name).collect()
}

/// (sets, ready sets, entries) in the file.
fn filed(path: &std::path::Path) -> (i64, i64, i64) {
    let db = Connection::open(path).unwrap();
    db.query_row(
        "SELECT (SELECT count(*) FROM vector_list_sets),
                (SELECT count(*) FROM vector_list_sets WHERE ready = 1),
                (SELECT count(*) FROM vector_list_entries)",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )
    .unwrap()
}

#[tokio::test]
async fn a_large_perspective_is_searched_through_its_inverted_file() {
    let store = Arc::new(crate::open_fresh().await.with_vector_lists_from(200));
    let path = store.path().to_owned();
    let embedder = Arc::new(TermEmbedder);
    let (memory, workspace) = memory_with_workspace(store.clone(), "lists").await;
    let memory = memory.with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    nodes(&memory, workspace, 0..300).await;
    indexer.run_until_idle().await.unwrap();
    assert_eq!(store.build_vector_lists().await.unwrap(), 1);
    assert_eq!(filed(&path), (1, 1, 300));
    assert_eq!(
        store.build_vector_lists().await.unwrap(),
        0,
        "nothing more is due"
    );

    // Fourfold: a new set replaces the first.
    nodes(&memory, workspace, 300..1_200).await;
    indexer.run_until_idle().await.unwrap();
    assert_eq!(
        filed(&path),
        (1, 1, 1_200),
        "saved vectors are filed as they come"
    );
    let queries: Vec<String> = (0..40)
        .map(|t| format!("topic{t}a topic{t}c item{}", t * 7))
        .collect();
    let mut exact = Vec::new();
    {
        // The exact answers, from a store that has no inverted file.
        let scan = Connection::open(&path).unwrap();
        scan.execute("UPDATE vector_list_sets SET ready = 0", [])
            .unwrap();
        for query in &queries {
            exact.push(found(&memory, workspace, query).await);
        }
        scan.execute("UPDATE vector_list_sets SET ready = 1", [])
            .unwrap();
    }
    assert_eq!(store.build_vector_lists().await.unwrap(), 1);
    assert_eq!(filed(&path), (1, 1, 1_200));
    let (mut kept, mut wanted) = (0, 0);
    for (query, exact) in queries.iter().zip(&exact) {
        let approximate = found(&memory, workspace, query).await;
        assert_eq!(approximate.first(), exact.first(), "{query}");
        let exact: HashSet<&String> = exact.iter().collect();
        kept += approximate.iter().filter(|n| exact.contains(n)).count();
        wanted += exact.len();
    }
    let recall = kept as f64 / wanted as f64;
    eprintln!("recall@10 through the inverted file: {recall:.3} ({kept} of {wanted})");
    assert!(recall >= 0.9, "recall@10 {recall:.3}");

    // Written after the build: found; deleted: gone, with its entry.
    memory
        .call(
            workspace,
            CreateEntities::new(vec![entity("late", "item", &["zebra quartz violin"])]),
        )
        .await
        .unwrap();
    indexer.run_until_idle().await.unwrap();
    assert_eq!(
        found(&memory, workspace, "zebra quartz violin").await[0],
        "late"
    );
    memory
        .call(workspace, DeleteEntities::new(&["late".to_owned()]))
        .await
        .unwrap();
    let after = found(&memory, workspace, "zebra quartz violin").await;
    assert!(!after.contains(&"late".to_owned()), "{after:?}");
    assert_eq!(filed(&path), (1, 1, 1_200));
    // Searches read the lists: without their entries no vector matches, and the search
    // answers from full text.
    let db = Connection::open(&path).unwrap();
    db.execute("DELETE FROM vector_list_entries", []).unwrap();
    let results = memory
        .call(
            workspace,
            SearchNodes::new(&queries[0])
                .mode(SearchMode::Embedding)
                .min_score(Some(0.0)),
        )
        .await
        .unwrap();
    assert_eq!(results.mode, SearchMode::Text, "{results:?}");
}

/// A build another process left unfinished (killed: its set stays unready, no longer marked
/// alive) is taken up by a running process at its next search once the set counts as
/// abandoned, though nothing is saved meanwhile.
#[tokio::test]
async fn a_running_process_takes_up_a_build_another_left_unfinished() {
    let store = Arc::new(
        crate::open_fresh()
            .await
            .with_vector_lists_from(200)
            .with_vector_list_checks_every(std::time::Duration::from_millis(50)),
    );
    let path = store.path().to_owned();
    let embedder = Arc::new(TermEmbedder);
    let (memory, workspace) = memory_with_workspace(store.clone(), "lists").await;
    let memory = memory.with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    nodes(&memory, workspace, 0..300).await;
    indexer.run_until_idle().await.unwrap();
    store.build_vector_lists().await.unwrap();
    assert_eq!(filed(&path), (1, 1, 300));

    // Another builder at work: its set is unready and was marked alive just now.
    let other = Connection::open(&path).unwrap();
    let now = || {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        i64::try_from(since.unwrap().as_micros()).unwrap()
    };
    other
        .execute(
            "UPDATE vector_list_sets SET ready = 0, created_at = ?1",
            [now()],
        )
        .unwrap();
    other
        .execute(
            "DELETE FROM vector_list_entries WHERE embedding_id % 2 = 0",
            [],
        )
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    found(&memory, workspace, "topic3a").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(filed(&path).1, 0, "a live builder's set is left to it");

    // Killed: its set is no longer marked alive. Three minutes later, a search takes it up.
    other
        .execute(
            "UPDATE vector_list_sets SET created_at = ?1",
            [now() - 180_000_000],
        )
        .unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    found(&memory, workspace, "topic3a").await;
    let started = std::time::Instant::now();
    while filed(&path) != (1, 1, 300) {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "not built again: {:?}",
            filed(&path)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}
