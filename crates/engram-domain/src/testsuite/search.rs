//! Semantic search end to end: the indexer embeds with [`TermEmbedder`] (texts that share
//! words get similar vectors), and `search_nodes`, `query_observations` and
//! `find_similar_nodes` answer from the store's vectors, or from full text when they cannot.

use crate::store::ModelEmbeddings;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::*;
use crate::GetStats;
use crate::{
    Embedder, Error, FindSimilarNodes, FoundObservations, Indexer, Memory, MemoryStore,
    QueryObservations, Result, SearchMode, SearchNodes, SearchObservations, SearchResults,
    WorkspaceId,
};

/// [`TermEmbedder`], counting the documents it embeds and keeping their texts.
#[derive(Default)]
struct Recording {
    documents: AtomicUsize,
    texts: Mutex<Vec<String>>,
    /// Calls of `embed_queries` and the query texts they embedded.
    query_calls: AtomicUsize,
    queries: AtomicUsize,
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

    async fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.query_calls.fetch_add(1, Ordering::Relaxed);
        self.queries.fetch_add(texts.len(), Ordering::Relaxed);
        TermEmbedder.embed_documents(texts).await
    }
}

/// An embedder that matches paraphrases but not codes, as real models do: words go through a
/// small synonym table, and words with digits are dropped, before [`TermEmbedder`] hashes
/// them.
struct Paraphrasing;

impl Paraphrasing {
    fn vector(text: &str) -> Vec<f32> {
        const SYNONYMS: [(&str, &str); 3] =
            [("automobile", "car"), ("mend", "fix"), ("repair", "fix")];
        let words: Vec<String> = (text.split(|c: char| !c.is_alphanumeric()))
            .map(str::to_lowercase)
            .filter(|w| !w.chars().any(|c| c.is_ascii_digit()))
            .map(|w| {
                let synonym = SYNONYMS.iter().find(|(from, _)| *from == w);
                synonym.map_or(w, |(_, to)| (*to).to_owned())
            })
            .collect();
        TermEmbedder::vector(&words.join(" "))
    }
}

#[async_trait]
impl Embedder for Paraphrasing {
    fn model_id(&self) -> &str {
        "test/paraphrasing"
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| Self::vector(text)).collect())
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(Self::vector(text))
    }
}

/// An embedder that never answers a query (documents embed as [`TermEmbedder`]'s).
struct Hung;

#[async_trait]
impl Embedder for Hung {
    fn model_id(&self) -> &str {
        TermEmbedder.model_id()
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        TermEmbedder.embed_documents(texts).await
    }

    async fn embed_query(&self, _text: &str) -> Result<Vec<f32>> {
        std::future::pending().await
    }
}

/// An embedder that refuses any batch holding the word "poison" (as a server answers 500 for
/// one input), counting its calls.
#[derive(Default)]
pub(super) struct Picky {
    pub(super) calls: AtomicUsize,
}

#[async_trait]
impl Embedder for Picky {
    fn model_id(&self) -> &str {
        TermEmbedder.model_id()
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if texts.iter().any(|t| t.contains("poison")) {
            return Err(Error::Unavailable("the embedder answered 500".into()));
        }
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
    f.memory
        .call(f.ws, GetStats {})
        .await
        .unwrap()
        .embedding_coverage
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
        .call(f.ws, CreateEntities::new(entities))
        .await
        .unwrap();
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
        .call(
            f.ws,
            SearchNodes::new("who moved to Lisbon").mode(SearchMode::Embedding),
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
    assert!(found.results[0].score <= 1.0 + 1e-6);
    let names: Vec<&str> = found.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 4, "each node once: {names:?}");

    let pet = f
        .memory
        .call(
            f.ws,
            SearchNodes::new("golden retriever")
                .limit(1)
                .mode(SearchMode::Embedding),
        )
        .await
        .unwrap();
    assert_eq!(pet.results.len(), 1);
    assert_eq!(pet.results[0].name, "Carol");

    // This embedder has no calibration: a `min_score` above every ranking score keeps none,
    // and the notice names the best and its score, as a calibrated search's does.
    let above_all = SearchNodes::new("who moved to Lisbon")
        .mode(SearchMode::Embedding)
        .min_score(Some(1.0));
    let none = f.memory.call(f.ws, above_all).await.unwrap();
    assert!(none.results.is_empty(), "{none:?}");
    let notice = none.notice.unwrap_or_default();
    assert!(
        notice.starts_with("nothing in memory matched: ")
            && notice.contains("below min_score 1 (the best: Alice, 0.")
            && notice.ends_with("a lower min_score shows them"),
        "{notice}"
    );
}

pub async fn changed_observations_and_context_are_re_embedded(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    f.embedder.take();
    f.memory
        .call(
            f.ws,
            ReplaceObservation::new("Dave", crate::Ordinal(1), "Dave keeps bees on his roof"),
        )
        .await
        .unwrap();
    let partial = coverage(&f).await;
    assert!(partial < 1.0 && partial > 0.0, "{partial}");
    assert_eq!(f.indexer.run_until_idle().await.unwrap(), 5);
    assert_eq!(f.embedder.take().len(), 5);
    let bees = f
        .memory
        .call(
            f.ws,
            SearchNodes::new("bees")
                .limit(1)
                .mode(SearchMode::Embedding),
        )
        .await
        .unwrap();
    assert_eq!(bees.results[0].name, "Dave");

    // New tags change only the perspectives that render tags: 2 of 5 vectors are re-made,
    // the other 3 are marked current without the model.
    f.memory
        .call(f.ws, SetTags::new("Alice", &strings(&["relocation"])))
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
        .call(
            f.ws,
            CreateRelations::new(&[relation("Alice", "knows", "Bob")]),
        )
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
        .call(f.ws, CreateEntities::new(vec![alice, bob]))
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    let job = f
        .memory
        .call(
            f.ws,
            QueryObservations::new("Alice", "which hospital").mode(SearchMode::Embedding),
        )
        .await
        .unwrap();
    assert_eq!(job.mode, SearchMode::Embedding);
    let ordinals: Vec<i64> = job.observations.iter().map(|o| o.ordinal.0).collect();
    assert_eq!(ordinals.len(), 3, "only Alice's, each once: {ordinals:?}");
    assert_eq!(ordinals[0], 2);
    let text = f
        .memory
        .call(
            f.ws,
            QueryObservations::new("Alice", "cats").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert_eq!(text.mode, SearchMode::Text);
    assert_eq!(text.observations.len(), 1);
    assert_eq!(text.observations[0].content, "has two cats");
    assert_eq!(
        f.memory
            .call(
                f.ws,
                QueryObservations::new("Nobody", "x").mode(SearchMode::Embedding)
            )
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
    f.memory
        .call(f.ws, CreateEntities::new(entities))
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    // The two compilers share about half their words; the bread shares none.
    let pairs = f
        .memory
        .call(
            f.ws,
            FindSimilarNodes {
                limit: 20,
                min_score: 0.4,
            },
        )
        .await
        .unwrap()
        .pairs;
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
            .call(
                f.ws,
                FindSimilarNodes {
                    limit: 20,
                    min_score: 0.6
                }
            )
            .await
            .unwrap()
            .pairs
            .is_empty()
    );

    // Related pairs are no longer candidates.
    f.memory
        .call(
            f.ws,
            CreateRelations::new(&[relation("rustc", "same_as", "Rust compiler")]),
        )
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    assert!(
        f.memory
            .call(
                f.ws,
                FindSimilarNodes {
                    limit: 20,
                    min_score: 0.4
                }
            )
            .await
            .unwrap()
            .pairs
            .is_empty()
    );
}

pub async fn embedding_mode_falls_back_to_text_and_says_so(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    // Nothing indexed yet: no vector can match.
    let unindexed = f
        .memory
        .call(f.ws, SearchNodes::new("Lisbon").mode(SearchMode::Embedding))
        .await
        .unwrap();
    assert_eq!(unindexed.mode, SearchMode::Text);
    assert!(unindexed.notice.as_deref().unwrap().contains("full-text"));
    assert_eq!(unindexed.results[0].name, "Alice");

    // An embedder that cannot be reached.
    let memory = Memory::new(f.store.clone()).with_embedder(Arc::new(Down));
    let answer = memory
        .call(
            f.ws,
            SearchNodes::new("which tools build the project").mode(SearchMode::Embedding),
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
        .call(
            f.ws,
            AddObservations::new(&[additions("Bob", &["Bob moved to Porto"])]),
        )
        .await
        .unwrap();
}

pub async fn text_mode_matches_any_term_of_a_question(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    let found = f
        .memory
        .call(
            f.ws,
            SearchNodes::new("What does Dave drink in the morning?").mode(SearchMode::Text),
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
        .call(f.ws, SearchNodes::new("the of and").mode(SearchMode::Text))
        .await
        .unwrap();
    assert!(none.results.is_empty(), "{none:?}");
    let other = f.memory.create_workspace("other").await.unwrap().id;
    let elsewhere = f
        .memory
        .call(
            other,
            SearchNodes::new("Dave morning").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert!(elsewhere.results.is_empty(), "{elsewhere:?}");
    // Finding nothing, text mode says so, as a search whose candidates fell short does.
    for nothing in [&none, &elsewhere] {
        let notice = nothing.notice.as_deref().unwrap_or_default();
        assert!(
            notice.starts_with("nothing in memory matched"),
            "{nothing:?}"
        );
    }
    // Deleted observations are no longer found.
    f.memory
        .call(f.ws, DeleteEntities::new(&strings(&["Dave"])))
        .await
        .unwrap();
    let gone = f
        .memory
        .call(
            f.ws,
            SearchNodes::new("Dave morning").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert!(gone.results.is_empty(), "{gone:?}");
}

pub async fn chinese_and_japanese_are_found_by_full_text(store: Arc<dyn MemoryStore>) {
    // No embedding model: full text alone must find them.
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity(
                    "田中",
                    "person",
                    &["田中さんは東京に住んでいます", "毎朝コーヒーを飲む"],
                ),
                entity("王伟", "person", &["王伟在北京的银行工作", "他喜欢打篮球"]),
                entity("Alice", "person", &["Alice lives in Lisbon"]),
            ]),
        )
        .await
        .unwrap();
    // A text that changes is indexed as it reads now, and an ended one leaves.
    memory
        .call(
            ws,
            ReplaceObservation::new("王伟", crate::Ordinal(2), "他喜欢踢足球"),
        )
        .await
        .unwrap();
    for (query, node, fact) in [
        (
            "田中さんはどこに住んでいますか",
            "田中",
            "田中さんは東京に住んでいます",
        ),
        ("東京", "田中", "田中さんは東京に住んでいます"),
        ("王伟在哪里工作", "王伟", "王伟在北京的银行工作"),
        ("谁喜欢踢足球", "王伟", "他喜欢踢足球"),
    ] {
        for mode in [SearchMode::Text, SearchMode::Hybrid] {
            let found = memory
                .call(ws, SearchObservations::new(query).mode(mode))
                .await
                .unwrap();
            let first =
                (found.observations.first()).unwrap_or_else(|| panic!("{query}: {found:?}"));
            assert_eq!(
                (first.name.as_str(), first.content.as_str()),
                (node, fact),
                "{query}"
            );
        }
    }
    let old = memory
        .call(ws, SearchObservations::new("打篮球").mode(SearchMode::Text))
        .await
        .unwrap();
    assert!(old.observations.is_empty(), "{old:?}");
    // English is searched as before.
    let found = memory
        .call(ws, SearchNodes::new("Lisbon").mode(SearchMode::Text))
        .await
        .unwrap();
    assert_eq!(found.results[0].name, "Alice");
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

/// The first result's name and signals.
fn first(found: &SearchResults) -> Option<(&str, Vec<&str>)> {
    let hit = found.results.first()?;
    Some((&hit.name, hit.signals.iter().map(String::as_str).collect()))
}

pub async fn hybrid_finds_what_only_one_signal_can(store: Arc<dyn MemoryStore>) {
    let embedder = Arc::new(Paraphrasing);
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let ws = memory.create_workspace("hybrid").await.unwrap().id;
    let entities = vec![
        entity(
            "Garage",
            "place",
            &["the mechanic will fix the car on Friday"],
        ),
        entity(
            "Incident",
            "ticket",
            &["outage 20931 was caused by a full disk"],
        ),
        entity("Kitchen", "place", &["the oven needs cleaning"]),
        entity(
            "Server",
            "machine",
            &["disk usage alerts fire at ninety percent"],
        ),
    ];
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    Indexer::new(store, embedder, 64)
        .run_until_idle()
        .await
        .unwrap();
    let search = async |query: &str, mode| {
        memory
            .call(ws, SearchNodes::new(query).mode(mode))
            .await
            .unwrap()
    };

    // A paraphrase shares no word with the fact: only the embedding finds it.
    let paraphrase = "who can mend my automobile";
    let text = search(paraphrase, SearchMode::Text).await;
    assert!(text.results.iter().all(|r| r.name != "Garage"), "{text:?}");
    let hybrid = search(paraphrase, SearchMode::Hybrid).await;
    assert_eq!(hybrid.mode, SearchMode::Hybrid);
    assert_eq!(hybrid.notice, None);
    assert_eq!(first(&hybrid), Some(("Garage", vec!["embedding:general"])));
    assert_eq!(
        hybrid.results[0].matched_perspective.as_deref(),
        Some("general")
    );
    assert!(hybrid.results[0].score > hybrid.results[1].score);
    assert!(hybrid.results[0].score <= 1.0 + 1e-9);

    // An exact code means nothing to the model: only full text finds it.
    let embedding = search("20931", SearchMode::Embedding).await;
    assert_eq!(embedding.mode, SearchMode::Embedding);
    assert_ne!(first(&embedding).unwrap().0, "Incident", "{embedding:?}");
    let hybrid = search("20931", SearchMode::Hybrid).await;
    let (name, signals) = first(&hybrid).unwrap();
    assert_eq!(name, "Incident");
    assert!(signals.contains(&"text"), "{signals:?}");
    assert!(hybrid.results[0].score > hybrid.results[1].score);

    // Hybrid is the default mode.
    assert_eq!(SearchMode::default(), SearchMode::Hybrid);
}

pub async fn search_observations_ranks_every_matching_observation(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    let entities = vec![
        entity(
            "Alice",
            "person",
            &[
                "works as a nurse at the city hospital",
                "has two cats",
                "swims in the hospital pool on Mondays",
            ],
        ),
        entity("Bob", "person", &["works at the hospital too"]),
        entity("Clinic", "place", &["the hospital clinic opens at eight"]),
    ];
    f.memory
        .call(f.ws, CreateEntities::new(entities))
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();
    let search = async |limit, mode, types: &[&str]| {
        (f.memory)
            .call(
                f.ws,
                SearchObservations::new("hospital")
                    .limit(limit)
                    .mode(mode)
                    .entity_types(strings(types).to_vec()),
            )
            .await
            .unwrap()
    };
    for mode in [SearchMode::Hybrid, SearchMode::Embedding, SearchMode::Text] {
        let found = search(10, mode, &[]).await;
        assert_eq!(found.mode, mode);
        let hospital: Vec<(&str, i64)> = (found.observations.iter())
            .filter(|o| o.content.contains("hospital"))
            .map(|o| (o.name.as_str(), o.ordinal.0))
            .collect();
        // Both of Alice's hospital facts, not only her best one.
        assert_eq!(hospital.len(), 4, "{mode:?}: {found:?}");
        assert!(hospital.contains(&("Alice", 1)) && hospital.contains(&("Alice", 3)));
        assert!(
            found.observations[..4]
                .iter()
                .all(|o| o.content.contains("hospital")),
            "{mode:?}: the hospital facts first: {found:?}"
        );
        let scores: Vec<f64> = found.observations.iter().map(|o| o.score).collect();
        assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
        // Hybrid says the text signal found it; text mode says so by its mode alone.
        let text = found.observations[0].signals.contains(&"text".to_owned());
        assert_eq!(text, mode == SearchMode::Hybrid, "{mode:?}");
    }
    let two = search(2, SearchMode::Hybrid, &[]).await;
    assert_eq!(two.observations.len(), 2);
    let places = search(10, SearchMode::Hybrid, &["place"]).await;
    let names: Vec<&str> = places
        .observations
        .iter()
        .map(|o| o.name.as_str())
        .collect();
    assert_eq!(names, ["Clinic"]);
    assert_eq!(places.observations[0].entity_type, "place");
    let nobody = search(10, SearchMode::Text, &["robot"]).await;
    assert!(nobody.observations.is_empty());

    // Bad arguments name the field and change nothing.
    let many: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    let refused = |result: Result<FoundObservations>, expected: &str| match result {
        Err(Error::InvalidArgument { field, .. }) => assert_eq!(field, expected),
        other => panic!("{expected}: {other:?}"),
    };
    let memory = &f.memory;
    refused(
        memory
            .call(
                f.ws,
                SearchObservations::new("x")
                    .mode(SearchMode::Text)
                    .entity_types(many.to_vec()),
            )
            .await,
        "entity_types",
    );
    refused(
        memory
            .call(
                f.ws,
                SearchObservations::new("x")
                    .mode(SearchMode::Text)
                    .entity_types(strings(&[""]).to_vec()),
            )
            .await,
        "entity_types[0]",
    );
    refused(
        memory
            .call(
                f.ws,
                SearchObservations::new("x").limit(0).mode(SearchMode::Text),
            )
            .await,
        "limit",
    );
    refused(
        memory
            .call(f.ws, SearchObservations::new(" ").mode(SearchMode::Text))
            .await,
        "query",
    );
}

/// Every search row names its matched fact's ordinal and since when the fact holds, and
/// `open_nodes` gives every fact's `valid_from`, so a model can tell which fact is newer.
pub async fn search_rows_carry_their_facts_ordinal_and_valid_from(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    let day: Timestamp = "2025-01-15T00:00:00Z".parse().unwrap();
    let alice = NewNode {
        observations: vec![
            "Alice drinks green tea".into(),
            crate::NewFact {
                content: "Alice moved to Lisbon".into(),
                valid_from: Some(day),
                expires_at: None,
            },
        ],
        ..entity("Alice", "person", &[])
    };
    let bob = entity("Bob", "person", &["Bob builds boats"]);
    f.memory
        .call(f.ws, CreateEntities::new(vec![alice, bob]))
        .await
        .unwrap();
    f.indexer.run_until_idle().await.unwrap();

    // open_nodes: every fact with its valid_from; a plain one holds from when it was written,
    // in the transaction that created the node.
    let opened = open_node(&f.memory, f.ws, "Alice").await;
    let from: Vec<(i64, Option<Timestamp>)> = (opened.observations.iter())
        .map(|o| (o.ordinal.0, o.valid_from))
        .collect();
    assert_eq!(from, [(1, Some(opened.created_at)), (2, Some(day))]);
    let written = opened.created_at;

    for mode in [SearchMode::Hybrid, SearchMode::Text] {
        let nodes = (f.memory)
            .call(
                f.ws,
                SearchNodes::new("Lisbon").mode(mode).min_score(Some(0.0)),
            )
            .await
            .unwrap();
        let hit = &nodes.results[0];
        assert_eq!(
            (hit.name.as_str(), hit.ordinal.0, hit.valid_from),
            ("Alice", 2, day),
            "{mode:?}: {nodes:?}"
        );
        let nodes = (f.memory)
            .call(
                f.ws,
                SearchNodes::new("green tea")
                    .mode(mode)
                    .min_score(Some(0.0)),
            )
            .await
            .unwrap();
        let hit = &nodes.results[0];
        assert_eq!(
            (hit.name.as_str(), hit.ordinal.0, hit.valid_from),
            ("Alice", 1, written),
            "{mode:?}: {nodes:?}"
        );

        let facts = (f.memory)
            .call(
                f.ws,
                SearchObservations::new("Lisbon boats")
                    .mode(mode)
                    .min_score(Some(0.0)),
            )
            .await
            .unwrap();
        let mut rows: Vec<(&str, i64, Timestamp)> = (facts.observations.iter())
            .filter(|o| o.content.contains("Lisbon") || o.content.contains("boats"))
            .map(|o| (o.name.as_str(), o.ordinal.0, o.valid_from))
            .collect();
        rows.sort();
        let bob = open_node(&f.memory, f.ws, "Bob").await;
        assert_eq!(
            rows,
            [
                ("Alice", 2, day),
                ("Bob", 1, bob.observations[0].valid_from.unwrap())
            ],
            "{mode:?}: {facts:?}"
        );

        let within = (f.memory)
            .call(
                f.ws,
                QueryObservations::new("Alice", "Lisbon")
                    .mode(mode)
                    .min_score(Some(0.0)),
            )
            .await
            .unwrap();
        let first = &within.observations[0];
        assert_eq!((first.ordinal.0, first.valid_from), (2, day), "{mode:?}");
    }

    // A search of a past time reads the same: the dated fact held then, the other not yet.
    let then: Timestamp = "2025-06-01T00:00:00Z".parse().unwrap();
    let past = (f.memory)
        .call(
            f.ws,
            SearchNodes::new("Alice Lisbon tea")
                .mode(SearchMode::Text)
                .min_score(Some(0.0))
                .as_of(then),
        )
        .await
        .unwrap();
    let rows: Vec<(&str, i64, Timestamp)> = (past.results.iter())
        .map(|hit| (hit.name.as_str(), hit.ordinal.0, hit.valid_from))
        .collect();
    assert_eq!(rows, [("Alice", 2, day)], "{past:?}");
}

pub async fn a_search_embeds_its_query_once_and_remembers_it(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    let calls = || f.embedder.query_calls.load(Ordering::Relaxed);
    let texts = || f.embedder.queries.load(Ordering::Relaxed);
    // Five perspectives, one rendering of the query: one text in one call.
    let found = (f.memory)
        .call(f.ws, SearchNodes::new("golden retriever"))
        .await
        .unwrap();
    assert_eq!(found.results[0].name, "Carol");
    assert_eq!((calls(), texts()), (1, 1));
    // The same query again, from any tool: no model call.
    (f.memory)
        .call(
            f.ws,
            SearchObservations::new("golden retriever").mode(SearchMode::Embedding),
        )
        .await
        .unwrap();
    (f.memory)
        .call(f.ws, QueryObservations::new("Carol", "golden retriever"))
        .await
        .unwrap();
    assert_eq!((calls(), texts()), (1, 1));
    // A perspective that renders queries its own way: two texts, still one call.
    let mut temporal = (f.memory.perspectives(f.ws).await.unwrap().into_iter())
        .find(|p| p.name == "temporal")
        .unwrap();
    temporal.query_template = "when: {query}".into();
    f.memory.set_perspective(f.ws, &temporal).await.unwrap();
    (f.memory)
        .call(f.ws, SearchNodes::new("tea in the morning"))
        .await
        .unwrap();
    assert_eq!((calls(), texts()), (2, 3));
    // Text mode never calls the model.
    (f.memory)
        .call(
            f.ws,
            SearchNodes::new("cargo builds").mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert_eq!(calls(), 2);
}

/// A search renders its query for the perspectives the workspace's last search saw; its store
/// call reads them again in its snapshot, so one changed by another process (another `Memory`
/// on the same store) is used by the next search, not the one after.
pub async fn a_perspective_changed_elsewhere_is_seen_by_the_next_search(
    store: Arc<dyn MemoryStore>,
) {
    let f = fixture(store.clone()).await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    let perspectives_of = |found: &SearchResults| -> Vec<String> {
        let mut seen: Vec<String> = (found.results.iter())
            .flat_map(|r| r.signals.iter())
            .filter(|s| s.starts_with("embedding:"))
            .cloned()
            .collect();
        seen.sort();
        seen.dedup();
        seen
    };
    let hybrid = SearchMode::Hybrid;
    let before = (f
        .memory
        .call(f.ws, SearchNodes::new("tea in the morning").mode(hybrid)))
    .await
    .unwrap();
    assert_eq!(before.results[0].name, "Dave");
    assert_eq!(perspectives_of(&before).len(), 5, "{before:?}");

    let elsewhere = Memory::new(store);
    for mut perspective in elsewhere.perspectives(f.ws).await.unwrap() {
        if perspective.name != "temporal" {
            perspective.enabled = false;
            elsewhere.set_perspective(f.ws, &perspective).await.unwrap();
        }
    }
    let after = (f
        .memory
        .call(f.ws, SearchNodes::new("tea in the morning").mode(hybrid)))
    .await
    .unwrap();
    assert_eq!(after.results[0].name, "Dave");
    assert_eq!(perspectives_of(&after), ["embedding:temporal"], "{after:?}");
}

pub async fn a_hung_embedder_costs_one_budget_not_one_per_search(store: Arc<dyn MemoryStore>) {
    let f = fixture(store).await;
    people(&f).await;
    f.indexer.run_until_idle().await.unwrap();
    let budget = std::time::Duration::from_millis(200);
    let memory = Memory::new(f.store.clone())
        .with_embedder(Arc::new(Hung))
        .with_query_embedding_budget(budget);
    let started = std::time::Instant::now();
    let first = memory
        .call(f.ws, SearchNodes::new("golden retriever"))
        .await
        .unwrap();
    let waited = started.elapsed();
    assert!(waited >= budget && waited < budget * 10, "{waited:?}");
    assert_eq!(first.mode, SearchMode::Text);
    assert_eq!(first.results[0].name, "Carol");
    assert!(
        first
            .notice
            .as_deref()
            .unwrap()
            .contains("did not answer within 200 ms"),
        "{first:?}"
    );
    // The embedder is skipped for a while: the next searches do not wait for it.
    for mode in [SearchMode::Embedding, SearchMode::Hybrid] {
        let started = std::time::Instant::now();
        let next = memory
            .call(f.ws, SearchNodes::new("tea").mode(mode))
            .await
            .unwrap();
        assert!(started.elapsed() < budget, "{:?}", started.elapsed());
        assert_eq!(next.mode, SearchMode::Text);
        assert!(
            next.notice
                .as_deref()
                .unwrap()
                .contains("trying it again in"),
            "{next:?}"
        );
    }
}

pub async fn a_text_the_embedder_rejects_does_not_stop_the_others(store: Arc<dyn MemoryStore>) {
    let embedder = Arc::new(Picky::default());
    let (memory, ws) = memory_with_workspace(store.clone(), "picky").await;
    let memory = memory.with_embedder(embedder.clone());
    let facts: Vec<String> = (0..20)
        .map(|i| format!("fact number {i} about gardens"))
        .collect();
    let mut facts: Vec<&str> = facts.iter().map(String::as_str).collect();
    facts[7] = "a poison fact";
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("Garden", "place", &facts)]),
        )
        .await
        .unwrap();
    let indexer = Indexer::new(store.clone(), embedder.clone(), 64);
    // Everything but the rejected text is stored, in one pass.
    assert_eq!(indexer.run_until_idle().await.unwrap(), 19);
    let coverage = memory
        .call(ws, GetStats {})
        .await
        .unwrap()
        .embedding_coverage;
    assert!((coverage - 19.0 / 20.0).abs() < 1e-9, "{coverage}");
    let rejected = indexer.rejected();
    assert_eq!(rejected.len(), 1, "{rejected:?}");
    assert!(rejected[0].2.contains("answered 500"), "{rejected:?}");
    // Said by node and ordinal to whoever looks (the viewer), in its workspace only.
    let memory = memory.with_indexer(indexer.clone());
    let texts = memory.rejected_texts(ws);
    assert_eq!(
        (
            texts.len(),
            texts[0].name.as_str(),
            texts[0].ordinal,
            texts[0].perspective.as_str()
        ),
        (1, "Garden", crate::Ordinal(8), "general"),
        "{texts:?}"
    );
    // The indexer's last pass found only the rejected text pending, and nothing was written
    // since: the coverage is taken from that, without counting vectors, and agrees with the
    // count.
    assert!(indexer.idle_at().is_some());
    let counted = (store
        .embedding_coverage(ModelEmbeddings {
            workspace: ws,
            model: embedder.model_id(),
        })
        .await)
        .unwrap();
    let vouched = memory
        .call(ws, GetStats {})
        .await
        .unwrap()
        .embedding_coverage;
    assert!((vouched - 19.0 / 20.0).abs() < 1e-9 && (counted - vouched).abs() < 1e-9);
    let elsewhere = memory.create_workspace("elsewhere").await.unwrap().id;
    assert!(memory.rejected_texts(elsewhere).is_empty());
    // And to the agent: counted by get_stats, named in a search's notice (not blamed on
    // indexing still running).
    assert_eq!(
        memory.call(ws, GetStats {}).await.unwrap().rejected_texts,
        1
    );
    assert_eq!(
        memory
            .call(elsewhere, GetStats {})
            .await
            .unwrap()
            .rejected_texts,
        0
    );
    let found = memory
        .call(ws, SearchNodes::new("poison").limit(5))
        .await
        .unwrap();
    let notice = found.notice.unwrap_or_default();
    assert!(
        notice.contains("1 text(s) of this workspace were refused by the embedder")
            && notice.contains("Garden #8")
            && notice.contains("answered 500"),
        "{notice}"
    );
    assert_eq!(found.results[0].name, "Garden", "found by full text");
    // Set aside: the next passes do not call the embedder for it again.
    let calls = embedder.calls.load(Ordering::Relaxed);
    assert!(calls <= 12, "bisecting 20 texts took {calls} calls");
    assert_eq!(indexer.run_once().await.unwrap(), 0);
    assert_eq!(embedder.calls.load(Ordering::Relaxed), calls);
    // A changed text is a new one, tried at once.
    memory
        .call(
            ws,
            ReplaceObservation::new("Garden", crate::Ordinal(8), "a harmless fact"),
        )
        .await
        .unwrap();
    indexer.run_until_idle().await.unwrap();
    assert_eq!(
        memory
            .call(ws, GetStats {})
            .await
            .unwrap()
            .embedding_coverage,
        1.0
    );
    assert_eq!(
        memory.call(ws, GetStats {}).await.unwrap().rejected_texts,
        0
    );
    // A write after the idle pass: the coverage is counted again, not vouched for.
    memory
        .call(
            ws,
            AddObservations::new(&[additions("Garden", &["a late fact"])]),
        )
        .await
        .unwrap();
    // (The node changed, so all its vectors are stale until the indexer renders them again.)
    let late = memory
        .call(ws, GetStats {})
        .await
        .unwrap()
        .embedding_coverage;
    let counted = (store
        .embedding_coverage(ModelEmbeddings {
            workspace: ws,
            model: embedder.model_id(),
        })
        .await)
        .unwrap();
    assert!(late < 1.0 && late == counted, "{late} {counted}");

    // An embedder that is down is not bisected: one call and its probe, nothing set aside.
    let down = Indexer::new(store.clone(), Arc::new(Down), 64);
    memory
        .call(
            ws,
            AddObservations::new(&[additions("Garden", &["one more"])]),
        )
        .await
        .unwrap();
    assert!(matches!(down.run_once().await, Err(Error::Unavailable(_))));
    assert!(down.rejected().is_empty());
}

/// While an indexer works, `get_stats` reuses its last count of the embedding coverage (for
/// `COVERAGE_REUSE`) until something is written, and counts again after a write.
pub async fn coverage_counts_are_reused_while_indexing_until_a_write(store: Arc<dyn MemoryStore>) {
    let f = fixture(store.clone()).await;
    let memory = f.memory.clone().with_indexer(f.indexer.clone());
    people(&f).await;
    // The indexer has not passed yet: counted, nothing embedded.
    assert_eq!(
        memory
            .call(f.ws, GetStats {})
            .await
            .unwrap()
            .embedding_coverage,
        0.0
    );
    // One pass embeds everything, but the indexer has not vouched for it (its pass found
    // work), and nothing was written: the count is reused, where counting says 1.
    assert!(f.indexer.run_once().await.unwrap() > 0);
    assert!(f.indexer.idle_at().is_none());
    assert_eq!(coverage(&f).await, 1.0);
    assert_eq!(
        memory
            .call(f.ws, GetStats {})
            .await
            .unwrap()
            .embedding_coverage,
        0.0
    );
    // A write: counted again (the node changed, so its vectors are stale until re-rendered).
    memory
        .call(
            f.ws,
            AddObservations::new(&[additions("Alice", &["Alice learns Portuguese"])]),
        )
        .await
        .unwrap();
    let counted = coverage(&f).await;
    assert!(counted > 0.0 && counted < 1.0, "{counted}");
    assert_eq!(
        memory
            .call(f.ws, GetStats {})
            .await
            .unwrap()
            .embedding_coverage,
        counted
    );
}

/// The indexer remembers where a rejected text is; once its observation is deleted, the next
/// pass that sees the whole queue forgets it, and it is no longer reported.
pub async fn a_rejected_text_is_forgotten_when_its_observation_goes(store: Arc<dyn MemoryStore>) {
    let embedder = Arc::new(Picky::default());
    let (memory, ws) = memory_with_workspace(store.clone(), "weeds").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity("Weeds", "place", &["a poison fact"]),
                entity("Roses", "place", &["roses need sun"]),
            ]),
        )
        .await
        .unwrap();
    let indexer = Indexer::new(store.clone(), embedder, 64);
    indexer.run_until_idle().await.unwrap();
    let memory = memory.with_indexer(indexer.clone());
    assert_eq!(memory.rejected_texts(ws).len(), 1);
    memory
        .call(ws, DeleteEntities::new(&["Weeds".to_owned()]))
        .await
        .unwrap();
    indexer.run_once().await.unwrap();
    assert!(memory.rejected_texts(ws).is_empty());
    assert_eq!(
        memory.call(ws, GetStats {}).await.unwrap().rejected_texts,
        0
    );
}

/// A text query leaves out a word that more than half of a large store contains
/// (`words::COMMON_TERM_FLOOR`), unless it has only such words; a small store keeps every
/// word. Not in the suite's list: PostgreSQL reads the words' shares from statistics that
/// `refresh` must bring up to date after each write, so each store's tests call this.
pub async fn common_words_are_left_out_of_text_queries<F, Fut>(
    store: Arc<dyn MemoryStore>,
    refresh: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let (memory, workspace) = memory_with_workspace(store, "common").await;
    let parts = |from: usize, to: usize| {
        (from..to)
            .map(|i| {
                entity(
                    &format!("part-{i:05}"),
                    "part",
                    &["a widget of the usual kind"],
                )
            })
            .collect::<Vec<_>>()
    };
    let names = |query: &'static str| {
        let memory = &memory;
        async move {
            let found = memory
                .call(workspace, SearchNodes::new(query).mode(SearchMode::Text))
                .await
                .unwrap();
            (found.results.into_iter())
                .map(|hit| hit.name)
                .collect::<Vec<_>>()
        }
    };
    // Every observation says "widget"; one also says "sprocket". 41 of them: a small store
    // keeps every word, and the rare one ranks first.
    let mut nodes = parts(0, 40);
    nodes.push(entity("odd", "part", &["a widget with a sprocket"]));
    memory
        .call(workspace, CreateEntities::new(nodes))
        .await
        .unwrap();
    refresh().await;
    let small = names("which widget has a sprocket").await;
    assert_eq!((small.len(), small[0].as_str()), (10, "odd"));
    // 4,041: "widget" is in more than half of them and in more than 2,000, so it ranks
    // nothing and only the rare word matches.
    for from in (40..4_040).step_by(1_000) {
        let batch = parts(from, from + 1_000);
        memory
            .call(workspace, CreateEntities::new(batch))
            .await
            .unwrap();
    }
    refresh().await;
    assert_eq!(names("which widget has a sprocket").await, ["odd"]);
    // A query of common words alone still finds them.
    assert_eq!(names("widget").await.len(), 10);
}

/// Text ranking weighs a word by its rarity: an observation with the query's rare word once
/// ranks above one that repeats a word most observations hold. Not in the suite's list for
/// the same reason as [`common_words_are_left_out_of_text_queries`]: PostgreSQL reads the
/// words' shares from statistics that `refresh` brings up to date.
pub async fn rare_words_outrank_common_ones<F, Fut>(store: Arc<dyn MemoryStore>, refresh: F)
where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let (memory, workspace) = memory_with_workspace(store, "rarity").await;
    let mut nodes: Vec<_> = (0..30)
        .map(|i| {
            entity(
                &format!("part-{i:02}"),
                "part",
                &["a widget of the usual kind"],
            )
        })
        .collect();
    nodes.push(entity("plain", "part", &["a crate of parts"]));
    nodes.push(entity(
        "heavy",
        "part",
        &["widget widget widget, widgets galore"],
    ));
    nodes.push(entity("odd", "part", &["a sprocket"]));
    memory
        .call(workspace, CreateEntities::new(nodes))
        .await
        .unwrap();
    refresh().await;
    for mode in [SearchMode::Text, SearchMode::Hybrid] {
        let found = memory
            .call(
                workspace,
                SearchNodes::new("widget sprocket").limit(5).mode(mode),
            )
            .await
            .unwrap();
        assert_eq!(found.results[0].name, "odd", "{mode:?}: {found:?}");
    }
}

/// A word in more texts than a search ranks (`words::FREQUENT_TERM_RANKED`, and less than
/// half of them) is ranked over its first matches only, but a text holding a rarer word of
/// the query is always found, wherever it is stored; narrowed searches too. Not in the
/// suite's list for the same reason as [`common_words_are_left_out_of_text_queries`].
pub async fn rare_words_are_found_beside_frequent_ones<F, Fut>(
    store: Arc<dyn MemoryStore>,
    refresh: F,
) where
    F: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let (memory, workspace) = memory_with_workspace(store, "frequent").await;
    // 2,240 of 5,600 texts say "gear": it is frequent, not common.
    for batch in 0..7 {
        let nodes = (0..800)
            .map(|i| {
                let n = batch * 800 + i;
                let text = match n % 5 {
                    0 | 1 => "a gear of the usual kind",
                    _ => "a crate of parts",
                };
                entity(&format!("part-{n:05}"), "part", &[text])
            })
            .collect::<Vec<_>>();
        memory
            .call(workspace, CreateEntities::new(nodes))
            .await
            .unwrap();
    }
    // Stored last, after every other text holding "gear".
    memory
        .call(
            workspace,
            CreateEntities::new(vec![entity("odd", "spare", &["a gear with a sprocket"])]),
        )
        .await
        .unwrap();
    refresh().await;
    let found = memory
        .call(
            workspace,
            SearchNodes::new("gear sprocket")
                .limit(5)
                .mode(SearchMode::Text),
        )
        .await
        .unwrap();
    assert_eq!(found.results[0].name, "odd", "{found:?}");
    let types = ["part".to_owned(), "spare".to_owned()];
    let narrowed = memory
        .call(
            workspace,
            SearchObservations::new("which gear has a sprocket")
                .limit(5)
                .mode(SearchMode::Text)
                .entity_types(types.to_vec()),
        )
        .await
        .unwrap();
    assert_eq!(narrowed.observations[0].name, "odd", "{narrowed:?}");
    let gear = memory
        .call(workspace, SearchNodes::new("gear").mode(SearchMode::Text))
        .await
        .unwrap();
    assert_eq!(gear.results.len(), 10, "{gear:?}");
}
