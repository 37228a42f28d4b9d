//! Embeddings and search: the indexer's queue and its state in the store, vector search,
//! full-text search, node aggregates and similar pairs. Semantic behaviour runs on
//! [`TermEmbedder`] (shared words make similar vectors); storage behaviour on hand-made vectors
//! saved straight through [`MemoryStore::save_embeddings`].

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::*;
use crate::perspectives::{Perspective, render_document};
use crate::{
    Embedder, EmbeddingRecord, EmbeddingTask, Error, Indexer, Memory, MemoryStore, Result,
    SearchMode, WorkspaceId, text_hash,
};

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

/// Saves a hand-made vector for every pending task of `model` for which `vector` gives one.
async fn save_vectors(
    store: &Arc<dyn MemoryStore>,
    model: &str,
    vector: impl Fn(&EmbeddingTask) -> Option<Vec<f32>>,
) -> usize {
    let tasks = store.pending_embeddings(model, 1_000).await.unwrap();
    let records: Vec<EmbeddingRecord> = tasks
        .iter()
        .filter_map(|task| {
            let text = render_document(&task.document_template, &task.context);
            Some(EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: text_hash(&text),
                source_updated_at: task.source_updated_at,
                vector: Some(vector(task)?),
            })
        })
        .collect();
    store.save_embeddings(model, &records).await.unwrap();
    records.len()
}

/// The id of the workspace's perspective `name`.
async fn perspective(store: &Arc<dyn MemoryStore>, ws: WorkspaceId, name: &str) -> Perspective {
    store
        .perspectives(ws)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.name == name)
        .unwrap()
}

/// `(node, ordinal, score rounded to 3 places)` of each hit.
fn hits(found: &[crate::ObservationHit]) -> Vec<(String, i64, i64)> {
    found
        .iter()
        .map(|h| (h.name.clone(), h.ordinal, (h.score * 1000.0).round() as i64))
        .collect()
}

fn hit(name: &str, ordinal: i64, score: i64) -> (String, i64, i64) {
    (name.to_owned(), ordinal, score)
}

/// A unit vector along axis `i` of `dims`.
fn axis(i: usize, dims: usize) -> Vec<f32> {
    let mut v = vec![0.0; dims];
    v[i] = 1.0;
    v
}

pub async fn vector_search_keeps_to_its_workspace_model_perspective_and_node(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, one) = memory_with_workspace(store.clone(), "one").await;
    let two = memory.create_workspace("two").await.unwrap().id;
    for (ws, prefix) in [(one, ""), (two, "two ")] {
        let content = |text: &str| format!("{prefix}{text}");
        let a = entity("A", "thing", &[&content("x"), &content("y")]);
        let b = entity("B", "thing", &[&content("x-ish")]);
        memory.create_entities(ws, vec![a, b]).await.unwrap();
    }
    // Model m: "x" along axis 0, "y" along axis 1, "x-ish" between them but nearer 0; in
    // workspace two everything points along axis 2. Model n: everything along axis 0.
    let saved = save_vectors(&store, "m", |task| {
        Some(match task.context.content.as_str() {
            "x" => axis(0, 3),
            "y" => axis(1, 3),
            "x-ish" => vec![0.8, 0.6, 0.0],
            _ => axis(2, 3),
        })
    })
    .await;
    assert_eq!(saved, 30);
    assert_eq!(save_vectors(&store, "n", |_| Some(axis(0, 3))).await, 30);
    let general = perspective(&store, one, "general").await.id;
    let search = async |ws, model: &str, perspective, k, within| {
        hits(
            &store
                .vector_search(ws, model, perspective, &axis(0, 3), k, within)
                .await
                .unwrap(),
        )
    };

    assert_eq!(
        search(one, "m", general, 10, None).await,
        [hit("A", 1, 1000), hit("B", 1, 800), hit("A", 2, 0)]
    );
    assert_eq!(
        search(one, "m", general, 2, None).await,
        [hit("A", 1, 1000), hit("B", 1, 800)]
    );
    assert_eq!(
        search(one, "m", general, 10, Some("B")).await,
        [hit("B", 1, 800)]
    );
    assert_eq!(
        search(one, "m", general, 1, Some("A")).await,
        [hit("A", 1, 1000)]
    );
    assert!(
        search(one, "m", general, 10, Some("Ghost"))
            .await
            .is_empty()
    );
    assert_eq!(
        search(
            two,
            "m",
            perspective(&store, two, "general").await.id,
            10,
            None
        )
        .await,
        [hit("A", 1, 0), hit("A", 2, 0), hit("B", 1, 0)]
    );
    // Another perspective's vectors, another model's, and vectors of another dimension.
    let other_perspective = perspective(&store, two, "general").await.id;
    assert!(
        search(one, "m", other_perspective, 10, None)
            .await
            .is_empty()
    );
    assert_eq!(search(one, "n", general, 10, None).await.len(), 3);
    assert!(search(one, "unknown", general, 10, None).await.is_empty());
    let wider = store
        .vector_search(one, "m", general, &axis(0, 4), 10, None)
        .await
        .unwrap();
    assert!(wider.is_empty());
}

pub async fn vectors_of_several_dimensions_live_side_by_side(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "dims").await;
    memory
        .create_entities(ws, vec![entity("A", "thing", &["a1", "a2"])])
        .await
        .unwrap();
    let ordinal_axis = |task: &EmbeddingTask, dims| axis(task.context.ordinal as usize, dims);
    assert_eq!(
        save_vectors(&store, "three", |t| Some(ordinal_axis(t, 3))).await,
        10
    );
    assert_eq!(
        save_vectors(&store, "five", |t| Some(ordinal_axis(t, 5))).await,
        10
    );
    let general = perspective(&store, ws, "general").await.id;
    for (model, dims) in [("three", 3), ("five", 5)] {
        let found = store
            .vector_search(ws, model, general, &axis(2, dims), 10, None)
            .await
            .unwrap();
        assert_eq!(hits(&found), [hit("A", 2, 1000), hit("A", 1, 0)], "{model}");
        let node = store.node_vectors(ws, model, general).await.unwrap();
        assert_eq!(node.len(), 1);
        assert_eq!(node[0].vector.len(), dims);
    }
    assert_eq!(coverage_of(&store, ws, "three").await, 1.0);
    assert_eq!(coverage_of(&store, ws, "five").await, 1.0);
}

async fn coverage_of(store: &Arc<dyn MemoryStore>, ws: WorkspaceId, model: &str) -> f64 {
    store.embedding_coverage(ws, model).await.unwrap()
}

pub async fn node_vectors_are_the_mean_of_their_observation_vectors(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "means").await;
    memory
        .create_entities(
            ws,
            vec![
                entity("B", "kind_b", &["b1", "b2"]),
                entity("A", "kind_a", &["a1"]),
                entity("Empty", "thing", &[]),
            ],
        )
        .await
        .unwrap();
    let by_ordinal = |task: &EmbeddingTask| Some(axis(task.context.ordinal as usize - 1, 2));
    save_vectors(&store, "m", by_ordinal).await;
    let general = perspective(&store, ws, "general").await.id;
    let vectors = |store: Arc<dyn MemoryStore>| async move {
        store
            .node_vectors(ws, "m", general)
            .await
            .unwrap()
            .into_iter()
            .map(|n| (n.name, n.entity_type, n.vector))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        vectors(store.clone()).await,
        [
            ("A".to_owned(), "kind_a".to_owned(), vec![1.0, 0.0]),
            ("B".to_owned(), "kind_b".to_owned(), vec![0.5, 0.5])
        ]
    );

    // B loses an observation: its other one is re-indexed (its text is unchanged, so no new
    // vector), and its mean follows. A loses its only one: its aggregate goes at the next save.
    memory
        .delete_observations(ws, &[deletions("B", &[1]), deletions("A", &[1])])
        .await
        .unwrap();
    let tasks = store.pending_embeddings("m", 100).await.unwrap();
    assert_eq!(tasks.len(), 5);
    let unchanged: Vec<EmbeddingRecord> = tasks
        .iter()
        .map(|task| {
            let text = render_document(&task.document_template, &task.context);
            assert_eq!(
                task.stored_hash.as_deref(),
                Some(text_hash(&text).as_slice())
            );
            EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: text_hash(&text),
                source_updated_at: task.source_updated_at,
                vector: None,
            }
        })
        .collect();
    store.save_embeddings("m", &unchanged).await.unwrap();
    assert!(store.pending_embeddings("m", 100).await.unwrap().is_empty());
    assert_eq!(
        vectors(store.clone()).await,
        [("B".to_owned(), "kind_b".to_owned(), vec![0.0, 1.0])]
    );
    assert_eq!(coverage_of(&store, ws, "m").await, 1.0);
}

pub async fn deleted_things_take_their_vectors_with_them(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "gone").await;
    memory
        .create_entities(
            ws,
            vec![
                entity("A", "thing", &["a1", "a2"]),
                entity("B", "thing", &["b1"]),
            ],
        )
        .await
        .unwrap();
    save_vectors(&store, "m", |_| Some(vec![1.0, 0.0])).await;
    let general = perspective(&store, ws, "general").await.id;
    let found = async || {
        let found = store
            .vector_search(ws, "m", general, &[1.0, 0.0], 10, None)
            .await
            .unwrap();
        let mut found: Vec<(String, i64)> =
            found.into_iter().map(|h| (h.name, h.ordinal)).collect();
        found.sort();
        found
    };
    assert_eq!(
        found().await,
        [("A".into(), 1), ("A".into(), 2), ("B".into(), 1)]
    );
    memory
        .delete_observations(ws, &[deletions("A", &[2])])
        .await
        .unwrap();
    assert_eq!(found().await, [("A".into(), 1), ("B".into(), 1)]);
    memory.delete_entities(ws, &strings(&["B"])).await.unwrap();
    assert_eq!(found().await, [("A".into(), 1)]);

    // A's remaining observation: 5 perspectives; clearing drops them and makes them pending.
    assert_eq!(store.clear_embeddings(ws, "other").await.unwrap(), 0);
    assert_eq!(store.clear_embeddings(ws, "m").await.unwrap(), 5);
    assert!(found().await.is_empty());
    assert!(
        store
            .node_vectors(ws, "m", general)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.pending_embeddings("m", 100).await.unwrap().len(), 5);
    assert_eq!(coverage_of(&store, ws, "m").await, 0.0);

    // Deleting the workspace deletes its vectors with it: a new one starts empty.
    save_vectors(&store, "m", |_| Some(vec![1.0, 0.0])).await;
    memory.delete_workspace("gone", true).await.unwrap();
    assert!(store.pending_embeddings("m", 100).await.unwrap().is_empty());
    let (memory, ws) = memory_with_workspace(store.clone(), "gone").await;
    memory
        .create_entities(ws, vec![entity("A", "thing", &["a1"])])
        .await
        .unwrap();
    let general = perspective(&store, ws, "general").await.id;
    assert!(
        store
            .vector_search(ws, "m", general, &[1.0, 0.0], 10, None)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn a_changed_template_drops_its_perspectives_vectors(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "views").await;
    memory
        .create_entities(ws, vec![entity("A", "thing", &["a1", "a2"])])
        .await
        .unwrap();
    assert_eq!(
        save_vectors(&store, "m", |_| Some(vec![1.0, 0.0])).await,
        10
    );
    let general = perspective(&store, ws, "general").await;

    // Disabling keeps the vectors but takes the perspective out of indexing and coverage.
    let disabled = Perspective {
        enabled: false,
        ..general.clone()
    };
    memory.set_perspective(ws, &disabled).await.unwrap();
    assert_eq!(store.embedding_pairs(ws).await.unwrap(), 8);
    assert_eq!(coverage_of(&store, ws, "m").await, 1.0);
    memory.set_perspective(ws, &general).await.unwrap();
    assert_eq!(store.embedding_pairs(ws).await.unwrap(), 10);
    assert!(store.pending_embeddings("m", 100).await.unwrap().is_empty());

    // A new document template makes the perspective's vectors go.
    let shouting = Perspective {
        document_template: "{name}! {observation}!".into(),
        ..general.clone()
    };
    let stored = memory.set_perspective(ws, &shouting).await.unwrap();
    assert_eq!(stored.id, general.id);
    let pending = store.pending_embeddings("m", 100).await.unwrap();
    assert_eq!(pending.len(), 2);
    assert!(pending.iter().all(|t| t.perspective_id == general.id
        && t.document_template == "{name}! {observation}!"
        && t.stored_hash.is_none()));
    assert_eq!(coverage_of(&store, ws, "m").await, 0.8);
    assert!(
        store
            .vector_search(ws, "m", general.id, &[1.0, 0.0], 10, None)
            .await
            .unwrap()
            .is_empty()
    );
}

pub async fn the_change_marker_moves_on_writes_only(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store.clone(), "marks").await;
    let start = store.change_marker().await.unwrap();
    memory
        .create_entities(ws, vec![entity("A", "thing", &["a1"])])
        .await
        .unwrap();
    let created = store.change_marker().await.unwrap();
    assert_ne!(created, start);
    memory.open_nodes(ws, &strings(&["A"])).await.unwrap();
    memory.get_stats(ws).await.unwrap();
    assert_eq!(store.change_marker().await.unwrap(), created);
    memory.set_tags(ws, "A", &strings(&["t"])).await.unwrap();
    assert_ne!(store.change_marker().await.unwrap(), created);
}
