//! `LocalEmbedder` against the real all-MiniLM-L6-v2 files (fetched once into the cache).

use std::sync::LazyLock;

use engram_domain::{Embedder, Error};
use engram_embed::local::{self, DIMENSION, MODEL_FILES};
use engram_embed::{LocalEmbedder, LocalModel};

use crate::{dot, norm};

/// One embedder for every test, so the model loads once per test binary.
static EMBEDDER: LazyLock<LocalEmbedder> =
    LazyLock::new(|| LocalEmbedder::new(LocalModel::AllMiniLmL6V2));

async fn embed(texts: &[&str]) -> Vec<Vec<f32>> {
    let texts: Vec<String> = texts.iter().map(|text| (*text).to_owned()).collect();
    EMBEDDER.embed_documents(&texts).await.unwrap()
}

#[tokio::test]
async fn model_files_are_fetched_once_into_a_directory() {
    let dir = tokio::task::spawn_blocking(|| local::ensure_model_files(LocalModel::AllMiniLmL6V2))
        .await
        .unwrap()
        .unwrap();
    for file in MODEL_FILES {
        assert!(dir.join(file).is_file(), "{} has no {file}", dir.display());
    }
}

#[tokio::test]
async fn vectors_have_384_dimensions_and_unit_length() {
    assert_eq!(EMBEDDER.model_id(), "local/all-MiniLM-L6-v2");
    let vectors = embed(&["Alice moved to Lisbon in March", "", "ünïcödé ✓ 東京"]).await;
    assert_eq!(vectors.len(), 3);
    for vector in vectors {
        assert_eq!(vector.len(), DIMENSION);
        assert!((norm(&vector) - 1.0).abs() < 1e-5, "norm {}", norm(&vector));
    }
    let query = EMBEDDER
        .embed_query("where does Alice live now")
        .await
        .unwrap();
    assert_eq!(query.len(), DIMENSION);
}

#[tokio::test]
async fn content_tokens_come_with_their_signs() {
    use engram_domain::search::late_interaction::{bytes_per_token, max_sim};
    let texts = [
        "Alice moved to Lisbon in March",
        "the build uses cargo",
        "it is what it was",
    ]
    .map(str::to_owned);
    let embeddings = EMBEDDER.embed_documents_with_tokens(&texts).await.unwrap();
    let width = bytes_per_token(DIMENSION);
    // alice, moved, lisbon, march: "to" and "in" are stop words.
    let alice = embeddings[0].token_signs.clone().unwrap();
    assert_eq!(alice.len(), 4 * width);
    // The pooled vector is the one `embed_documents` gives.
    assert_eq!(embeddings[0].vector, embed(&[&texts[0]]).await[0]);
    // Nothing but stop words: no token signs.
    assert_eq!(embeddings[2].token_signs, None);
    let query = EMBEDDER
        .embed_queries_with_tokens(&["where does Alice live now".to_owned()])
        .await
        .unwrap();
    let query = query[0].token_signs.as_deref().unwrap();
    let cargo = embeddings[1].token_signs.as_deref().unwrap();
    let related = max_sim(query, &alice, DIMENSION).unwrap();
    let unrelated = max_sim(query, cargo, DIMENSION).unwrap();
    assert!(
        related > unrelated + 0.1,
        "related {related}, unrelated {unrelated}"
    );
}

#[tokio::test]
async fn a_paraphrase_is_closer_than_an_unrelated_text() {
    let query = EMBEDDER
        .embed_query("where does Alice live now")
        .await
        .unwrap();
    let documents = embed(&["Alice moved to Lisbon in March", "the build uses cargo"]).await;
    let related = dot(&query, &documents[0]);
    let unrelated = dot(&query, &documents[1]);
    assert!(
        related > unrelated + 0.2,
        "related {related}, unrelated {unrelated}"
    );
}

#[tokio::test]
async fn batches_give_the_vectors_of_one_by_one() {
    // More than one batch of 32, of very different lengths (one past the 256-token limit).
    let long = "the quick brown fox jumps over the lazy dog ".repeat(40);
    let texts: Vec<String> = (0..40)
        .map(|i| match i {
            7 => long.clone(),
            _ => format!("observation {i}: {}", "word ".repeat(i % 13)),
        })
        .collect();
    let together = EMBEDDER.embed_documents(&texts).await.unwrap();
    assert_eq!(together.len(), texts.len());
    for (text, vector) in texts.iter().zip(&together) {
        let alone = EMBEDDER.embed_query(text).await.unwrap();
        let cosine = dot(&alone, vector);
        assert!(cosine > 0.9999, "cosine {cosine} for {text:?}");
    }
}

#[tokio::test]
async fn empty_input_gives_empty_output_without_loading() {
    let embedder = LocalEmbedder::from_dir(LocalModel::AllMiniLmL6V2, "/nonexistent/model");
    assert!(embedder.embed_documents(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn missing_files_are_unavailable_and_say_how_to_fix_it() {
    let embedder = LocalEmbedder::from_dir(LocalModel::AllMiniLmL6V2, "/nonexistent/model");
    let err = embedder.embed_query("hello").await.unwrap_err();
    assert!(
        matches!(&err, Error::Unavailable(message) if message.contains("ENGRAM_MODEL_DIR")),
        "{err:?}"
    );
}

/// Vectors computed by sentence-transformers 6.2.0 (PyTorch) from the same files, for a
/// short text, a non-ASCII one and one of 362 tokens (truncated at 256).
#[tokio::test]
async fn files_that_fail_to_load_are_not_read_again_on_every_call() {
    let dir = tempfile::tempdir().unwrap();
    for file in MODEL_FILES {
        std::fs::write(dir.path().join(file), b"truncated").unwrap();
    }
    let embedder = LocalEmbedder::from_dir(LocalModel::AllMiniLmL6V2, dir.path());
    let first = embedder.embed_query("hello").await.unwrap_err();
    assert!(!first.to_string().contains("next attempt"), "{first}");
    // Within the back-off the files are not read again: the call fails at once, saying why.
    let second = embedder.embed_query("hello").await.unwrap_err();
    assert!(
        matches!(&second, Error::Unavailable(message) if message.contains("next attempt in")),
        "{second}"
    );
}

#[tokio::test]
async fn vectors_match_sentence_transformers() {
    #[derive(serde::Deserialize)]
    struct Reference {
        texts: Vec<String>,
        vectors: Vec<Vec<f32>>,
    }
    let reference: Reference = serde_json::from_str(include_str!("reference.json")).unwrap();
    let vectors = EMBEDDER.embed_documents(&reference.texts).await.unwrap();
    for ((text, expected), actual) in reference.texts.iter().zip(&reference.vectors).zip(&vectors) {
        let cosine = dot(expected, actual);
        assert!(cosine > 0.99999, "cosine {cosine} for {text:?}");
        let largest = expected
            .iter()
            .zip(actual)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        assert!(largest < 1e-4, "differs by {largest} for {text:?}");
    }
}
