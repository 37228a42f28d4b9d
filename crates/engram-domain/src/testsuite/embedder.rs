//! A deterministic embedder for the suite: texts that share words get similar vectors, so a
//! test can build a graph whose similarities it knows without running a real model.

use async_trait::async_trait;

use crate::{Embedder, Result};

/// Vector length of [`TermEmbedder`].
pub const TERM_DIMS: usize = 256;

/// Words too common to say anything about a text; [`TermEmbedder`] ignores them.
const STOP_WORDS: [&str; 24] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "has", "in", "is", "it", "of",
    "on", "or", "that", "the", "this", "to", "was", "were", "with",
];

/// Bag-of-words hashing embedder: every word of two letters or more, lower-cased and not a
/// stop word, adds 1 to one of [`TERM_DIMS`] coordinates (FNV-1a of the word); the result is
/// L2-normalised. Cosine similarity is then the overlap of vocabularies, which makes
/// "near-duplicate" and "cluster" easy to construct in a test. Model id `test/terms`.
#[derive(Debug, Clone, Copy, Default)]
pub struct TermEmbedder;

impl TermEmbedder {
    /// The vector of `text` (all zeros but the first coordinate for a text without words, so
    /// it is still a unit vector).
    pub fn vector(text: &str) -> Vec<f32> {
        let mut vector = vec![0.0_f32; TERM_DIMS];
        for word in text
            .split(|c: char| !c.is_alphanumeric())
            .map(str::to_lowercase)
            .filter(|w| w.chars().count() >= 2 && !STOP_WORDS.contains(&w.as_str()))
        {
            vector[bucket(&word)] += 1.0;
        }
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if norm == 0.0 {
            vector[0] = 1.0;
        } else {
            vector.iter_mut().for_each(|x| *x /= norm);
        }
        vector
    }
}

fn bucket(word: &str) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in word.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % TERM_DIMS as u64) as usize
}

#[async_trait]
impl Embedder for TermEmbedder {
    fn model_id(&self) -> &str {
        "test/terms"
    }

    async fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| Self::vector(text)).collect())
    }

    async fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        Ok(Self::vector(text))
    }

    /// Its cosines are shares of shared words: a repeat shares most of them, an update that
    /// says it changed a good part (the node's type and name, in every document, among them).
    fn fact_pairs(&self) -> Option<crate::FactPairCosines> {
        Some(crate::FactPairCosines {
            repeats: 0.75,
            may_update: 0.4,
        })
    }
}
