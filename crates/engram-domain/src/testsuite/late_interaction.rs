//! Late interaction end to end: token signs made by the indexer are stored beside the vectors,
//! read back for a search's candidates, and decide between candidates the other signals tie.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::*;
use crate::search::late_interaction::pack_signs;
use crate::search::{CandidateQuery, QueryVector};
use crate::{Embedder, Embedding, Indexer, Memory, MemoryStore, Result, SearchMode, SearchNodes};

/// Vector length of [`Tokenised`].
const DIMS: usize = 64;

/// An embedder whose pooled vector is the same for every text (so similarity ties) and whose
/// token signs are one hashed pattern per content word, with "kiwi" read as "banana" (a
/// word the model places near another); it keeps the documents' texts.
#[derive(Default)]
struct Tokenised {
    documents: Mutex<Vec<String>>,
}

impl Tokenised {
    fn embedding(text: &str) -> Embedding {
        let tokens: Vec<Vec<f32>> = (crate::search::words::words(text))
            .filter(|w| !crate::search::words::is_stop_word(w))
            .map(|w| if w == "kiwi" { "banana".to_owned() } else { w })
            .map(|w| {
                let hash = u64::from_le_bytes(crate::vectors::text_hash(&w).try_into().unwrap());
                (0..DIMS)
                    .map(|i| if hash >> i & 1 == 1 { 1.0 } else { -1.0 })
                    .collect()
            })
            .collect();
        let signs = pack_signs(DIMS, tokens.iter().map(Vec::as_slice));
        let mut vector = vec![0.0; DIMS];
        vector[0] = 1.0;
        Embedding {
            vector,
            token_signs: (!signs.is_empty()).then_some(signs),
        }
    }
}

#[async_trait]
impl Embedder for Tokenised {
    fn model_id(&self) -> &str {
        "test/tokenised"
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let embeddings = self.embed_documents_with_tokens(texts).await?;
        Ok(embeddings.into_iter().map(|e| e.vector).collect())
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(Self::embedding(text).vector)
    }

    async fn embed_documents_with_tokens(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        self.documents.lock().unwrap().extend(texts.iter().cloned());
        Ok(texts.iter().map(|text| Self::embedding(text)).collect())
    }

    async fn embed_queries_with_tokens(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        Ok(texts.iter().map(|text| Self::embedding(text)).collect())
    }
}

pub async fn late_interaction_decides_what_the_other_signals_tie(store: Arc<dyn MemoryStore>) {
    let embedder = Arc::new(Tokenised::default());
    let memory = Memory::new(store.clone()).with_embedder(embedder.clone());
    let ws = memory.create_workspace("late").await.unwrap().id;
    // The same words but one, of the same length: full text scores "apples" alike in both.
    let entities = vec![
        entity("Orchard", "farm", &["apples and banana grow here"]),
        entity("Market", "shop", &["apples and cherry sold here"]),
    ];
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    Indexer::new(store.clone(), embedder.clone(), 64)
        .run_until_idle()
        .await
        .unwrap();

    // The store hands back, for each candidate, the token signs made from its rendered text.
    let rendered = embedder.documents.lock().unwrap().clone();
    assert_eq!(rendered.len(), 2, "{rendered:?}");
    let general = (store.perspectives(ws).await.unwrap().into_iter())
        .find(|p| p.name == "general")
        .unwrap();
    let request = CandidateQuery {
        workspace: ws,
        perspectives: false,
        alias_runs: Vec::new(),
        text: None,
        model: "test/tokenised".into(),
        vectors: vec![QueryVector {
            perspective: general.id,
            perspective_name: general.name,
            vector: Tokenised::embedding("apples kiwi").vector,
            token_signs: Tokenised::embedding("apples kiwi").token_signs,
        }],
        depth: 10,
        text_depth: 0,
        within: None,
        entity_types: Vec::new(),
        as_of: None,
    };
    let candidates = store.search(&request).await.unwrap().candidates;
    assert_eq!(candidates.len(), 2);
    for candidate in &candidates {
        let text = (rendered.iter())
            .find(|t| t.ends_with(&candidate.row.content))
            .unwrap();
        let expected = Tokenised::embedding(text).token_signs;
        assert!(expected.is_some());
        assert_eq!(candidate.signals.token_signs, [expected], "{text}");
    }

    // Text and similarity tie (text mode breaks the tie by name); late interaction finds that
    // "kiwi" is answered by "banana" in the orchard alone.
    let search = async |mode| {
        memory
            .call(ws, SearchNodes::new("apples kiwi").mode(mode))
            .await
            .unwrap()
    };
    let text = search(SearchMode::Text).await;
    assert_eq!(text.results[0].score, text.results[1].score);
    assert_eq!(text.results[0].name, "Market");
    let hybrid = search(SearchMode::Hybrid).await;
    let names: Vec<&str> = hybrid.results.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["Orchard", "Market"]);
    let gap = hybrid.results[0].score - hybrid.results[1].score;
    assert!(
        (gap - crate::search::TOKEN_WEIGHT).abs() < 1e-9,
        "{hybrid:?}"
    );
}
