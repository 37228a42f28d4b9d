//! Semantic search end to end: the indexer embeds with [`TermEmbedder`] (texts that share
//! words get similar vectors), and `search_nodes`, `query_observations` and
//! `find_similar_nodes` answer from the store's vectors, or from full text when they cannot.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::*;
use crate::{Embedder, Error, Indexer, Memory, MemoryStore, Result, SearchMode, WorkspaceId};

/// [`TermEmbedder`], counting the documents it embeds and keeping their texts.
#[derive(Default)]
struct Recording {
    documents: AtomicUsize,
    texts: Mutex<Vec<String>>,
}

impl Recording {
    /// The texts embedded since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.texts.lock().unwrap())
    }
}

#[async_trait]
impl Embedder for Recording {
    fn model_id(&self) -> &str {
        TermEmbedder.model_id()
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.documents.fetch_add(texts.len(), Ordering::Relaxed);
        self.texts.lock().unwrap().extend_from_slice(texts);
        TermEmbedder.embed_documents(texts).await
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        TermEmbedder.embed_query(text).await
    }
}

/// An embedder that cannot be reached, with [`TermEmbedder`]'s model id.
struct Down;

#[async_trait]
impl Embedder for Down {
    fn model_id(&self) -> &str {
        TermEmbedder.model_id()
    }

    async fn embed_documents(&self, _texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Err(Error::Unavailable("test embedder is down".into()))
    }

    async fn embed_query(&self, _text: &str) -> Result<Vec<f32>> {
        Err(Error::Unavailable("test embedder is down".into()))
    }
}

struct Fixture {
    store: Arc<dyn MemoryStore>,
    memory: Memory,
    indexer: Indexer,
    embedder: Arc<Recording>,
    ws: WorkspaceId,
}

async fn fixture(store: Arc<dyn MemoryStore>) -> Fixture {
    let embedder = Arc::new(Recording::default());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let indexer = Indexer::new(store.clone(), embedder.clone(), 64);
    let ws = memory.create_workspace("search").await.unwrap().id;
    enable_every_perspective(&memory, ws).await;
    Fixture {
        store,
        memory,
        indexer,
        embedder,
        ws,
    }
}

async fn coverage(f: &Fixture) -> f64 {
    f.memory.get_stats(f.ws).await.unwrap().embedding_coverage
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
    f.memory.create_entities(f.ws, entities).await.unwrap();
}

pub async fn indexed_observations_are_found_by_meaning(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    assert_eq!(coverage(&f).await, 0.0);
    assert_eq!(f.store.embedding_pairs(f.ws).await.unwrap(), 20);
    // 4 observations x 5 perspectives.
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 20);
    assert_eq!(f.embedder.documents.load(Ordering::Relaxed), 20);
    assert_eq!(coverage(&f).await, 1.0);
    assert_eq!(f.indexer.run_once().await.unwrap(), 0);

    let found = f
        .memory
        .search_nodes(f.ws, "who moved to Lisbon", 10, SearchMode::Embedding)
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
    assert!(found.results[0].score <= 1.0 + 1e-6);
    let names: Vec<&str> = found.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 4, "each node once: {names:?}");

    let pet = f
        .memory
        .search_nodes(f.ws, "golden retriever", 1, SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(pet.results.len(), 1);
    assert_eq!(pet.results[0].name, "Carol");
}

pub async fn changed_observations_and_context_are_re_embedded(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    f.embedder.take();
    f.memory
        .replace_observation(f.ws, "Dave", 1, "Dave keeps bees on his roof")
        .await
        .unwrap();
    let partial = coverage(&f).await;
    assert!(partial < 1.0 && partial > 0.0, "{partial}");
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 5);
    assert_eq!(f.embedder.take().len(), 5);
    let bees = f
        .memory
        .search_nodes(f.ws, "bees", 1, SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(bees.results[0].name, "Dave");

    // New tags change only the perspectives that render tags: 2 of 5 vectors are re-made,
    // the other 3 are marked current without the model.
    f.memory
        .set_tags(f.ws, "Alice", &strings(&["relocation"]))
        .await
        .unwrap();
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 5);
    let mut remade = f.embedder.take();
    remade.sort();
    assert_eq!(
        remade,
        [
            "Alice,  [relocation]: Alice moved to Lisbon in March",
            "person Alice [relocation]: Alice moved to Lisbon in March"
        ]
    );
    assert_eq!(coverage(&f).await, 1.0);

    // A relation changes the relational perspective of both ends.
    f.memory
        .create_relations(f.ws, &[relation("Alice", "knows", "Bob")])
        .await
        .unwrap();
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 10);
    let mut remade = f.embedder.take();
    remade.sort();
    assert_eq!(
        remade,
        [
            "Alice (knows Bob): Alice moved to Lisbon in March",
            "Bob (Alice knows): Bob builds the project with cargo and rustc"
        ]
    );
    assert_eq!(coverage(&f).await, 1.0);
}

pub async fn query_observations_ranks_within_one_node(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    let alice = entity(
        "Alice",
        "person",
        &[
            "likes hiking in the mountains",
            "works as a nurse at the city hospital",
            "has two cats",
        ],
    );
    let bob = entity("Bob", "person", &["works at the hospital too"]);
    f.memory
        .create_entities(f.ws, vec![alice, bob])
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    let job = f
        .memory
        .query_observations(f.ws, "Alice", "which hospital", SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(job.mode, SearchMode::Embedding);
    let ordinals: Vec<i64> = job.observations.iter().map(|o| o.ordinal).collect();
    assert_eq!(ordinals.len(), 3, "only Alice's, each once: {ordinals:?}");
    assert_eq!(ordinals[0], 2);
    let text = f
        .memory
        .query_observations(f.ws, "Alice", "cats", SearchMode::Text)
        .await
        .unwrap();
    assert_eq!(text.mode, SearchMode::Text);
    assert_eq!(text.observations.len(), 1);
    assert_eq!(text.observations[0].content, "has two cats");
    assert_eq!(
        f.memory
            .query_observations(f.ws, "Nobody", "x", SearchMode::Embedding)
            .await
            .unwrap_err(),
        Error::node_not_found("Nobody")
    );
}

pub async fn similar_unrelated_nodes_are_paired(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
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
    f.memory.create_entities(f.ws, entities).await.unwrap();
    f.indexer.run_until_idle().await.unwrap();
    // The two compilers share about half their words; the bread shares none.
    let pairs = f.memory.find_similar_nodes(f.ws, 20, 0.4).await.unwrap();
    assert_eq!(pairs.len(), 1, "{pairs:?}");
    assert_eq!(
        (pairs[0].node_a.as_str(), pairs[0].node_b.as_str()),
        ("Rust compiler", "rustc")
    );
    assert_eq!(
        (pairs[0].node_a_type.as_str(), pairs[0].node_b_type.as_str()),
        ("tool", "tool")
    );
    assert!(pairs[0].similarity >= 0.4 && pairs[0].similarity <= 0.6);
    assert!(
        f.memory
            .find_similar_nodes(f.ws, 20, 0.6)
            .await
            .unwrap()
            .is_empty()
    );

    // Related pairs are no longer candidates.
    f.memory
        .create_relations(f.ws, &[relation("rustc", "same_as", "Rust compiler")])
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    assert!(
        f.memory
            .find_similar_nodes(f.ws, 20, 0.4)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn embedding_mode_falls_back_to_text_and_says_so(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    // Nothing indexed yet: no vector can match.
    let unindexed = f
        .memory
        .search_nodes(f.ws, "Lisbon", 10, SearchMode::Embedding)
        .await
        .unwrap();
    assert_eq!(unindexed.mode, SearchMode::Text);
    assert!(unindexed.notice.as_deref().unwrap().contains("full-text"));
    assert_eq!(unindexed.results[0].name, "Alice");

    // An embedder that cannot be reached.
    let memory = Memory::new(f.store.clone()).with_embedder(Arc::new(Down));
    let answer = memory
        .search_nodes(
            f.ws,
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
        .add_observations(f.ws, &[additions("Bob", &["Bob moved to Porto"])])
        .await
        .unwrap();
}

pub async fn text_mode_matches_any_term_of_a_question(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    let found = f
        .memory
        .search_nodes(
            f.ws,
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
    // Stop words alone match nothing; other workspaces are not searched.
    let none = f
        .memory
        .search_nodes(f.ws, "the of and", 10, SearchMode::Text)
        .await
        .unwrap();
    assert!(none.results.is_empty(), "{none:?}");
    let other = f.memory.create_workspace("other").await.unwrap().id;
    let elsewhere = f
        .memory
        .search_nodes(other, "Dave morning", 10, SearchMode::Text)
        .await
        .unwrap();
    assert!(elsewhere.results.is_empty(), "{elsewhere:?}");
    // Deleted observations are no longer found.
    f.memory
        .delete_entities(f.ws, &strings(&["Dave"]))
        .await
        .unwrap();
    let gone = f
        .memory
        .search_nodes(f.ws, "Dave morning", 10, SearchMode::Text)
        .await
        .unwrap();
    assert!(gone.results.is_empty(), "{gone:?}");
}

pub async fn the_indexer_loses_nothing_while_the_embedder_is_down(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    let failing = Indexer::new(f.store.clone(), Arc::new(Down), 64);
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
