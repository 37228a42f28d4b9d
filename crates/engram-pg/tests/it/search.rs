//! The indexer and the search tools against PostgreSQL with the real local model
//! (all-MiniLM-L6-v2, fetched once into the model cache): a paraphrase is found through the
//! HNSW index. The backend-neutral search tests are in the conformance suite
//! (`engram_domain::testsuite::search` on a deterministic test embedder, and `vectors`).

use std::sync::Arc;

use engram_domain::testsuite::entity;
use engram_domain::*;
use engram_embed::LocalEmbedder;
use engram_pg::PgStore;
use engram_pg::testing::fresh_database;

struct Fixture {
    url: String,
    store: Arc<PgStore>,
    memory: Memory,
    indexer: Indexer,
    workspace: WorkspaceId,
}

async fn fixture() -> Fixture {
    let url = fresh_database().await;
    let store = Arc::new(PgStore::connect(&url).await.unwrap());
    let embedder: Arc<dyn Embedder> = Arc::new(LocalEmbedder::default());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    let workspace = memory.create_workspace("search").await.unwrap().id;
    Fixture {
        url,
        store,
        memory,
        indexer,
        workspace,
    }
}

async fn coverage(f: &Fixture) -> f64 {
    let stats = f.memory.call(f.workspace, GetStats {}).await.unwrap();
    stats.embedding_coverage
}

async fn people(f: &Fixture) {
    let entities = vec![
        entity("Alice", "person", &["Alice moved to Lisbon in March"]),
        entity(
            "Bob",
            "person",
            &["Bob builds the project with cargo and rustc"],
        ),
        entity(
            "Carol",
            "person",
            &["Carol adopted a golden retriever puppy"],
        ),
        entity(
            "Dave",
            "person",
            &["Dave prefers tea over coffee in the morning"],
        ),
    ];
    f.memory
        .call(f.workspace, CreateEntities::new(entities))
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paraphrase_finds_its_observation() {
    let f = fixture().await;
    people(&f).await;
    assert_eq!(coverage(&f).await, 0.0);
    // 4 observations x 1 perspective (`general`, the only one enabled by default).
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 4);
    assert_eq!(coverage(&f).await, 1.0);

    let found = f
        .memory
        .call(
            f.workspace,
            SearchNodes::new("where does Alice live now")
                .mode(SearchMode::Embedding)
                .min_score(Some(0.0)),
        )
        .await
        .unwrap();
    assert_eq!(found.mode, SearchMode::Embedding);
    assert_eq!(found.notice, None);
    assert_eq!(found.results[0].name, "Alice");
    assert_eq!(
        found.results[0].matched_observation,
        "Alice moved to Lisbon in March"
    );
    assert!(found.results[0].matched_perspective.is_some());
    assert!(found.results[0].score > found.results[1].score);
    let names: Vec<&str> = found.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 4, "each node once: {names:?}");

    let pet = f
        .memory
        .call(
            f.workspace,
            SearchNodes::new("who has a dog")
                .limit(1)
                .mode(SearchMode::Embedding)
                .min_score(Some(0.0)),
        )
        .await
        .unwrap();
    assert_eq!(pet.results[0].name, "Carol");

    // Hybrid, the default: the paraphrase by meaning, the name by both signals (and the
    // node is one the query names).
    let hybrid = f
        .memory
        .call(
            f.workspace,
            SearchNodes::new("where does Alice live now").mode(SearchMode::default()),
        )
        .await
        .unwrap();
    assert_eq!(hybrid.mode, SearchMode::Hybrid);
    assert_eq!(hybrid.results[0].name, "Alice");
    assert_eq!(
        hybrid.results[0].signals,
        ["embedding:general", "text", "named"]
    );
}

/// Whether the 384-dimension HNSW index exists, and is valid.
async fn hnsw_index(store: &PgStore) -> Option<bool> {
    store.hnsw_index_state(384).await.unwrap()
}

/// [`hnsw_index`] once it is valid, or after 30 s.
async fn hnsw_index_built(store: &PgStore) -> Option<bool> {
    for _ in 0..300 {
        if hnsw_index(store).await == Some(true) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    hnsw_index(store).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hnsw_index_is_built_once_the_queue_is_empty() {
    let f = fixture().await;
    people(&f).await;
    // Passes of one pair: the queue is not empty after the first three, and vectors go in
    // without an index (searched exactly meanwhile).
    let indexer = Indexer::new(f.store.clone(), Arc::new(LocalEmbedder::default()), 1);
    for _ in 0..3 {
        assert_eq!(indexer.run_once().await.unwrap(), 1);
    }
    assert_eq!(hnsw_index(&f.store).await, None);
    let found = f
        .memory
        .call(
            f.workspace,
            SearchNodes::new("who relocated to Portugal?")
                .mode(SearchMode::Embedding)
                .min_score(Some(0.0)),
        )
        .await
        .unwrap();
    assert!(!found.results.is_empty());
    // The pass that finds the last pair finds fewer than it asked for: the index is built,
    // in the background.
    indexer.run_until_idle().await.unwrap();
    assert_eq!(hnsw_index_built(&f.store).await, Some(true));

    // A build that stopped leaves an invalid index, which another process (fresh state) drops
    // and builds again at its first empty queue.
    let client = f.store.pool().get().await.unwrap();
    client
        .execute(
            "UPDATE pg_index SET indisvalid = false
             WHERE indexrelid = to_regclass('embeddings_hnsw_384')",
            &[],
        )
        .await
        .unwrap();
    assert_eq!(hnsw_index(&f.store).await, Some(false));
    let restarted = Arc::new(PgStore::connect(&f.url).await.unwrap());
    let indexer = Indexer::new(restarted.clone(), Arc::new(LocalEmbedder::default()), 64);
    assert_eq!(indexer.run_until_idle().await.unwrap(), 0);
    assert_eq!(hnsw_index_built(&restarted).await, Some(true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vector_search_stays_on_the_hnsw_index() {
    let f = fixture().await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    assert_eq!(hnsw_index_built(&f.store).await, Some(true));
    let client = f.store.pool().get().await.unwrap();
    client
        .batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let zero = format!("[{}]", vec!["0.1"; 384].join(","));
    let plan: Vec<String> = client
        .query(
            &format!(
                "EXPLAIN SELECT e.observation_id FROM embeddings e
                 WHERE e.dims = 384 AND e.workspace_id = 1 AND e.model = 'local/all-MiniLM-L6-v2'
                   AND e.perspective_id = 1
                 ORDER BY e.embedding::vector(384) <=> '{zero}'::vector(384) LIMIT 10"
            ),
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    assert!(
        plan.iter().any(|line| line.contains("embeddings_hnsw_384")),
        "{plan:#?}"
    );
    // Node vectors are paired in memory: no index of theirs costs writes.
    let node_indexes: i64 = client
        .query_one(
            "SELECT count(*) FROM pg_indexes
             WHERE tablename = 'node_embeddings' AND indexname LIKE '%hnsw%'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(node_indexes, 0);
}

/// The plan of a workspace-wide nearest-neighbour query as `search` writes it, with literal
/// values (a custom plan, as the server's).
async fn nearest_plan(store: &PgStore, model: &str) -> Vec<String> {
    let client = store.pool().get().await.unwrap();
    let query = format!("[{}]", vec!["0.1"; 384].join(","));
    let explain = format!(
        "EXPLAIN SELECT e.observation_id FROM embeddings e
         WHERE e.dims = 384 AND e.workspace_id = 1 AND e.model = '{model}'
           AND e.perspective_id = 1
         ORDER BY e.embedding::vector(384) <=> '{query}'::vector(384) LIMIT 10"
    );
    (client.query(&explain, &[]).await.unwrap())
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_bulk_load_searches_walk_the_hnsw_index() {
    let store = Arc::new(PgStore::connect(&fresh_database().await).await.unwrap());
    let memory = Memory::new(store.clone());
    let ws = memory.create_workspace("bulk").await.unwrap().id;
    assert_eq!(ws, WorkspaceId(1));
    for batch in 0..6 {
        let entities = (0..1_000)
            .map(|i| entity(&format!("node {batch}-{i}"), "thing", &["a fact"]))
            .collect();
        memory
            .call(ws, CreateEntities::new(entities))
            .await
            .unwrap();
    }
    // 6,000 vectors saved in batches, as an indexer does: spread pseudo-random directions.
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let cursor = PendingCursor::default();
    loop {
        let request = PendingEmbeddings {
            model: "bulk",
            limit: 1_000,
            cursor: &cursor,
        };
        let tasks = store.pending_embeddings(request).await.unwrap();
        if tasks.is_empty() {
            break;
        }
        let records: Vec<EmbeddingRecord> = (tasks.iter())
            .filter(|task| task.perspective_name == "general")
            .map(|task| EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: vec![0; 8],
                source_updated_at: task.source_updated_at,
                vector: Some((0..384).map(|_| next()).collect()),
                token_signs: None,
            })
            .collect();
        store
            .save_embeddings(SaveEmbeddings {
                model: "bulk",
                records: &records,
            })
            .await
            .unwrap();
    }
    // The empty queue started the build; then the statistics describe 6,000 vectors, and the
    // planner walks the index instead of sorting the workspace's vectors.
    assert_eq!(hnsw_index_built(&store).await, Some(true));
    let mut plan = nearest_plan(&store, "bulk").await;
    for _ in 0..300 {
        if plan.iter().any(|line| line.contains("embeddings_hnsw_384")) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        plan = nearest_plan(&store, "bulk").await;
    }
    assert!(
        plan.iter().any(|line| line.contains("embeddings_hnsw_384")),
        "{plan:#?}"
    );
}
