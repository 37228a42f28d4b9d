//! The indexer and the search tools against PostgreSQL with the real local model
//! (all-MiniLM-L6-v2, fetched once into the model cache).

use std::sync::Arc;

use engram_domain::testsuite::{additions, entity, relation, strings};
use engram_domain::*;
use engram_embed::LocalEmbedder;
use engram_pg::PgStore;
use engram_pg::testing::fresh_database;

struct Fixture {
    store: Arc<PgStore>,
    memory: Memory,
    indexer: Indexer,
    workspace: WorkspaceId,
}

async fn fixture() -> Fixture {
    let store = Arc::new(PgStore::connect(&fresh_database().await).await.unwrap());
    let embedder: Arc<dyn Embedder> = Arc::new(LocalEmbedder::new());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder, 64);
    let workspace = memory.create_workspace("search").await.unwrap().id;
    Fixture {
        store,
        memory,
        indexer,
        workspace,
    }
}

async fn coverage(f: &Fixture) -> f64 {
    let stats = f.memory.get_stats(f.workspace).await.unwrap();
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
        .create_entities(f.workspace, entities)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paraphrase_finds_its_observation() {
    let f = fixture().await;
    people(&f).await;
    assert_eq!(coverage(&f).await, 0.0);
    // 4 observations x 5 perspectives.
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 20);
    assert_eq!(coverage(&f).await, 1.0);

    let found = f
        .memory
        .search_nodes(
            f.workspace,
            "where does Alice live now",
            10,
            SearchMode::Embedding,
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
        .search_nodes(f.workspace, "who has a dog", 1, SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(pet.results[0].name, "Carol");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn changed_observations_and_context_are_re_embedded() {
    let f = fixture().await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    f.memory
        .replace_observation(f.workspace, "Dave", 1, "Dave keeps bees on his roof")
        .await
        .unwrap();
    let partial = coverage(&f).await;
    assert!(partial < 1.0 && partial > 0.0, "{partial}");
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 5);
    let bees = f
        .memory
        .search_nodes(f.workspace, "beekeeping", 1, SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(bees.results[0].name, "Dave");

    // New tags change only the perspectives that render tags: 2 of 5 vectors are re-made.
    let before = embedded_at(&f, "Alice").await;
    f.memory
        .set_tags(f.workspace, "Alice", &strings(&["relocation"]))
        .await
        .unwrap();
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 5);
    let after = embedded_at(&f, "Alice").await;
    let remade: Vec<&str> = before
        .iter()
        .zip(&after)
        .filter(|(b, a)| b.1 != a.1)
        .map(|(b, _)| b.0.as_str())
        .collect();
    assert_eq!(remade, ["project", "technical"]);

    // A relation changes the relational perspective of both ends.
    f.memory
        .create_relations(f.workspace, &[relation("Alice", "knows", "Bob")])
        .await
        .unwrap();
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 10);
    assert_eq!(coverage(&f).await, 1.0);
}

/// `(perspective, embedded_at)` of a node's first observation, by perspective.
async fn embedded_at(f: &Fixture, node: &str) -> Vec<(String, String)> {
    let client = f.store.pool().get().await.unwrap();
    let rows = client
        .query(
            "SELECT p.name, e.embedded_at::text FROM embeddings e
             JOIN perspectives p ON p.id = e.perspective_id
             JOIN observations o ON o.id = e.observation_id
             JOIN nodes n ON n.id = o.node_id
             WHERE n.name = $1 AND o.ordinal = 1 ORDER BY p.name",
            &[&node],
        )
        .await
        .unwrap();
    rows.iter().map(|r| (r.get(0), r.get(1))).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_observations_ranks_within_one_node() {
    let f = fixture().await;
    let alice = entity(
        "Alice",
        "person",
        &[
            "likes hiking in the mountains",
            "works as a nurse at the city hospital",
            "has two cats",
        ],
    );
    f.memory
        .create_entities(f.workspace, vec![alice])
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    let job = f
        .memory
        .query_observations(
            f.workspace,
            "Alice",
            "what is her profession",
            SearchMode::Embedding,
        )
        .await
        .unwrap();
    assert_eq!(job.mode, SearchMode::Embedding);
    assert_eq!(job.observations.len(), 3);
    assert_eq!(job.observations[0].ordinal, 2);
    let text = f
        .memory
        .query_observations(f.workspace, "Alice", "cats", SearchMode::Text)
        .await
        .unwrap();
    assert_eq!(text.mode, SearchMode::Text);
    assert_eq!(text.observations.len(), 1);
    assert_eq!(text.observations[0].content, "has two cats");
    assert_eq!(
        f.memory
            .query_observations(f.workspace, "Nobody", "x", SearchMode::Embedding)
            .await
            .unwrap_err(),
        Error::node_not_found("Nobody")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn similar_unrelated_nodes_are_paired() {
    let f = fixture().await;
    let entities = vec![
        entity(
            "Rust compiler",
            "tool",
            &[
                "rustc compiles Rust code",
                "the Rust compiler checks borrows",
            ],
        ),
        entity(
            "rustc",
            "tool",
            &[
                "rustc is the compiler for the Rust language",
                "rustc checks the borrow rules",
            ],
        ),
        entity(
            "Sourdough",
            "recipe",
            &[
                "bake the sourdough bread at 250 degrees",
                "feed the starter daily",
            ],
        ),
    ];
    f.memory
        .create_entities(f.workspace, entities)
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    let pairs = f
        .memory
        .find_similar_nodes(f.workspace, 20, 0.6)
        .await
        .unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(
        (pairs[0].node_a.as_str(), pairs[0].node_b.as_str()),
        ("Rust compiler", "rustc")
    );
    assert_eq!(
        (pairs[0].node_a_type.as_str(), pairs[0].node_b_type.as_str()),
        ("tool", "tool")
    );
    assert!(pairs[0].similarity >= 0.6 && pairs[0].similarity <= 1.0);

    // Related pairs are no longer candidates.
    f.memory
        .create_relations(
            f.workspace,
            &[relation("rustc", "same_as", "Rust compiler")],
        )
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    assert!(
        f.memory
            .find_similar_nodes(f.workspace, 20, 0.6)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedding_mode_falls_back_to_text_and_says_so() {
    let f = fixture().await;
    people(&f).await;
    // Nothing indexed yet: no vector can match.
    let unindexed = f
        .memory
        .search_nodes(f.workspace, "Lisbon", 10, SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(unindexed.mode, SearchMode::Text);
    assert!(unindexed.notice.as_deref().unwrap().contains("full-text"));
    assert_eq!(unindexed.results[0].name, "Alice");

    // An embedder that cannot be reached.
    let down: Arc<dyn Embedder> = Arc::new(
        engram_embed::OllamaEmbedder::new("http://127.0.0.1:9", "nomic-embed-text").unwrap(),
    );
    let memory = Memory::new(f.store.clone()).with_embedder(down);
    let answer = memory
        .search_nodes(
            f.workspace,
            "which tools build the project",
            10,
            SearchMode::Embedding,
        )
        .await
        .unwrap();
    assert_eq!(answer.mode, SearchMode::Text);
    assert!(
        answer.notice.as_deref().unwrap().contains("unavailable"),
        "{answer:?}"
    );
    assert_eq!(answer.results[0].name, "Bob");
    // Writes never wait for the model.
    memory
        .add_observations(f.workspace, &[additions("Bob", &["Bob moved to Porto"])])
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vector_search_stays_on_the_hnsw_index() {
    let f = fixture().await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
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
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_mode_matches_any_term_of_a_question() {
    let f = fixture().await;
    people(&f).await;
    let found = f
        .memory
        .search_nodes(
            f.workspace,
            "What does Dave drink in the morning?",
            10,
            SearchMode::Text,
        )
        .await
        .unwrap();
    assert_eq!(found.mode, SearchMode::Text);
    assert_eq!(found.notice, None);
    assert_eq!(found.results[0].name, "Dave");
    assert!(found.results[0].matched_perspective.is_none());
    let deleted = f
        .memory
        .delete_entities(f.workspace, &strings(&["Dave"]))
        .await
        .unwrap();
    assert_eq!(deleted.deleted, ["Dave"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_indexer_loses_nothing_while_the_embedder_is_down() {
    let f = fixture().await;
    people(&f).await;
    let down: Arc<dyn Embedder> = Arc::new(
        engram_embed::OllamaEmbedder::new("http://127.0.0.1:9", "nomic-embed-text").unwrap(),
    );
    let failing = Indexer::new(f.store.clone(), down, 64);
    assert!(matches!(
        failing.run_once().await,
        Err(Error::Unavailable(_))
    ));
    assert_eq!(coverage(&f).await, 0.0);
    // A fresh indexer (as after a restart) finds all the work still pending.
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 20);
    assert_eq!(coverage(&f).await, 1.0);
    assert_eq!(f.indexer.run_once().await.unwrap(), 0);
}
