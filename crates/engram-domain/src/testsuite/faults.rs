//! A misbehaving embedder never breaks search: vectors that cannot be searched (NaN, zero,
//! ragged, too few) are rejected texts when they are documents and a full-text answer when
//! they are queries, never cached; a bad vector an older engram stored is skipped.

use crate::store::ModelEmbeddings;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use async_trait::async_trait;

use super::*;
use crate::GetStats;
use crate::{
    Embedder, Error, Indexer, MemoryStore, QueryObservations, Result, SearchMode, SearchNodes,
    SearchObservations,
};

/// What [`Faulty`] answers for queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum QueryFault {
    None,
    Nan,
    Zero,
    TooFew,
    Malformed,
}

/// [`TermEmbedder`]'s vectors, except for documents naming a fault ("nan", "zero", "ragged")
/// and for queries while a [`QueryFault`] is set.
#[derive(Default)]
struct Faulty {
    query_fault: AtomicU8,
}

impl Faulty {
    fn set(&self, fault: QueryFault) {
        self.query_fault.store(fault as u8, Ordering::Relaxed);
    }
}

fn document_vector(text: &str) -> Vec<f32> {
    let mut vector = TermEmbedder::vector(text);
    if text.contains("nan") {
        vector[3] = f32::NAN;
    } else if text.contains("zero") {
        vector.iter_mut().for_each(|x| *x = 0.0);
    } else if text.contains("ragged") {
        vector.truncate(TERM_DIMS / 2);
    }
    vector
}

#[async_trait]
impl Embedder for Faulty {
    fn model_id(&self) -> &str {
        TermEmbedder.model_id()
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|t| document_vector(t)).collect())
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(self.embed_queries(&[text.to_owned()]).await?.remove(0))
    }

    async fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let good = || texts.iter().map(|t| TermEmbedder::vector(t));
        let fault = self.query_fault.load(Ordering::Relaxed);
        Ok(match fault {
            f if f == QueryFault::Nan as u8 => good().map(|_| vec![f32::NAN; TERM_DIMS]).collect(),
            f if f == QueryFault::Zero as u8 => good().map(|_| vec![0.0; TERM_DIMS]).collect(),
            f if f == QueryFault::TooFew as u8 => Vec::new(),
            f if f == QueryFault::Malformed as u8 => {
                return Err(Error::Internal("the embedder's answer is not JSON".into()));
            }
            _ => good().collect(),
        })
    }
}

pub async fn a_misbehaving_embedder_never_breaks_search(store: Arc<dyn MemoryStore>) {
    let embedder = Arc::new(Faulty::default());
    let (memory, ws) = memory_with_workspace(store.clone(), "faults").await;
    let memory = memory.with_embedder(embedder.clone());
    let mut facts: Vec<String> = (0..8).map(|i| format!("garden fact {i} roses")).collect();
    facts.extend(["a nan fact about roses", "a zero fact", "a ragged fact"].map(String::from));
    let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("Garden", "place", &facts)]),
        )
        .await
        .unwrap();
    let indexer = Indexer::new(store.clone(), embedder.clone(), 64);
    // The good vectors are stored; the three bad ones are rejected texts, with their reasons.
    assert_eq!(indexer.run_until_idle().await.unwrap(), 8);
    let mut reasons: Vec<String> = indexer.rejected().into_iter().map(|r| r.2).collect();
    reasons.sort();
    assert_eq!(reasons.len(), 3, "{reasons:?}");
    assert!(
        reasons[0].contains("128 dimensions among vectors of 256"),
        "{reasons:?}"
    );
    assert!(reasons[1].contains("not a number"), "{reasons:?}");
    assert!(reasons[2].contains("zero vector"), "{reasons:?}");
    let memory = memory.with_indexer(indexer.clone());
    assert_eq!(
        memory.call(ws, GetStats {}).await.unwrap().rejected_texts,
        3
    );

    // A vector an older engram stored without this check (zero: every store takes it) is
    // skipped by every search, never an error.
    memory
        .call(
            ws,
            CreateEntities::new(vec![entity("Shed", "place", &["a shed full of roses"])]),
        )
        .await
        .unwrap();
    let saved = save_vectors(&store, embedder.model_id(), |task| {
        (task.context.name == "Shed").then(|| vec![0.0; TERM_DIMS])
    })
    .await;
    assert!(saved >= 1);
    for mode in [SearchMode::Hybrid, SearchMode::Embedding] {
        let found = (memory
            .call(
                ws,
                SearchNodes::new("roses").mode(mode).min_score(Some(0.0)),
            )
            .await)
            .unwrap();
        assert_eq!(found.results[0].name, "Garden", "{mode:?}: {found:?}");
        let facts = memory
            .call(
                ws,
                SearchObservations::new("roses")
                    .limit(20)
                    .mode(mode)
                    .min_score(Some(0.0)),
            )
            .await
            .unwrap();
        assert!(!facts.observations.is_empty(), "{mode:?}");
        for name in ["Garden", "Shed"] {
            let within = memory
                .call(
                    ws,
                    QueryObservations::new(name, "roses")
                        .mode(mode)
                        .min_score(Some(0.0)),
                )
                .await
                .unwrap();
            assert!(
                !within.observations.is_empty(),
                "{mode:?} {name}: {within:?}"
            );
        }
    }

    // A bad query vector: the search answers from full text and says why; nothing is cached,
    // so the next search, with the embedder well again, is hybrid.
    for (fault, said) in [
        (QueryFault::Nan, "not a number"),
        (QueryFault::Zero, "zero vector"),
        (QueryFault::TooFew, "returned 0 vectors for 1 queries"),
        (QueryFault::Malformed, "not JSON"),
    ] {
        let query = format!("roses {fault:?}");
        embedder.set(fault);
        let found = (memory
            .call(ws, SearchNodes::new(&query).limit(5).min_score(Some(0.0)))
            .await)
            .unwrap_or_else(|e| panic!("{fault:?}: {e}"));
        assert_eq!(found.mode, SearchMode::Text, "{fault:?}");
        let notice = found.notice.unwrap_or_default();
        assert!(notice.contains(said), "{fault:?}: {notice}");
        assert_eq!(found.results[0].name, "Garden");
        let within = memory
            .call(
                ws,
                QueryObservations::new("Garden", &query)
                    .mode(SearchMode::Embedding)
                    .min_score(Some(0.0)),
            )
            .await
            .unwrap();
        assert_eq!(within.mode, SearchMode::Text, "{fault:?}");
        embedder.set(QueryFault::None);
        let again = (memory
            .call(ws, SearchNodes::new(&query).limit(5).min_score(Some(0.0)))
            .await)
            .unwrap();
        assert_eq!(again.mode, SearchMode::Hybrid, "{fault:?}: {again:?}");
    }
}

/// Finding the texts an embedder refuses costs each pass at most two calls beside its fresh
/// batch: a workspace full of them does not hold another's indexing up.
pub async fn refused_texts_in_one_workspace_do_not_hold_up_another(store: Arc<dyn MemoryStore>) {
    let embedder = Arc::new(Picky::default());
    let (memory, troubled) = memory_with_workspace(store.clone(), "troubled").await;
    let poison: Vec<String> = (0..40).map(|i| format!("poison fact {i}")).collect();
    let poison: Vec<&str> = poison.iter().map(String::as_str).collect();
    memory
        .call(
            troubled,
            CreateEntities::new(vec![entity("Bad", "thing", &poison)]),
        )
        .await
        .unwrap();
    let fine = memory.create_workspace("fine").await.unwrap().id;
    let facts: Vec<String> = (0..10).map(|i| format!("good fact {i}")).collect();
    let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
    memory
        .call(
            fine,
            CreateEntities::new(vec![entity("Good", "thing", &facts)]),
        )
        .await
        .unwrap();
    let indexer = Indexer::new(store.clone(), embedder.clone(), 8);
    // The refused texts take the fresh batches they are in (5 of 8), the good ones theirs
    // (2): the fine workspace is done within those passes, however deep the
    // search for the refused ones goes (before, each refused batch of 8 was bisected within
    // its pass: 15 calls).
    let mut passes = 0;
    let model = embedder.model_id();
    while store
        .embedding_coverage(ModelEmbeddings {
            workspace: fine,
            model,
        })
        .await
        .unwrap()
        < 1.0
    {
        indexer.run_once().await.unwrap();
        passes += 1;
        assert!(passes <= 5 + 2, "the fine workspace waited {passes} passes");
    }
    // Each pass: its fresh batch, a probe when that fails, and one group of suspects.
    let calls = embedder.calls.load(Ordering::Relaxed);
    assert!(calls <= 3 * passes, "{calls} calls in {passes} passes");
    // The refused texts are all found in the end, each alone, and nothing else is refused.
    indexer.run_until_idle().await.unwrap();
    let rejected = indexer.rejected();
    assert_eq!(rejected.len(), 40, "{rejected:?}");
    assert!(rejected.iter().all(|r| r.2.contains("answered 500")));
    assert!(!indexer.has_suspects());
}
