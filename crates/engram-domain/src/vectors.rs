//! What the indexer and a store hand each other about vectors: the pairs to embed, the
//! vectors to save, a node's aggregate vector, and the hash that tells a changed text.

use crate::model::Timestamp;
use crate::perspectives::ObservationContext;

/// A node's aggregate vector in one perspective (the mean of its observation vectors).
#[derive(Debug, Clone, PartialEq)]
pub struct NodeVector {
    /// The node's name.
    pub name: String,
    /// Its type.
    pub entity_type: String,
    /// The vector, as stored (not necessarily unit length).
    pub vector: Vec<f32>,
}

/// An (observation, perspective) pair whose vector is missing or may be stale.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingTask {
    /// The observation.
    pub observation_id: i64,
    /// Its workspace.
    pub workspace: crate::WorkspaceId,
    /// The perspective.
    pub perspective_id: crate::PerspectiveId,
    /// The perspective's name.
    pub perspective_name: String,
    /// The perspective's document template.
    pub document_template: String,
    /// What the template renders.
    pub context: ObservationContext,
    /// The node's `updated_at` when the context was read.
    pub source_updated_at: Timestamp,
    /// The hash of the text the stored vector was made from, if there is one.
    pub stored_hash: Option<Vec<u8>>,
}

/// The indexer's answer for one task.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingRecord {
    /// The observation.
    pub observation_id: i64,
    /// The perspective.
    pub perspective_id: crate::PerspectiveId,
    /// Hash of the rendered text ([`text_hash`]).
    pub text_hash: Vec<u8>,
    /// The task's `source_updated_at`.
    pub source_updated_at: Timestamp,
    /// The new vector, or `None` when the text is unchanged and the stored vector stays.
    pub vector: Option<Vec<f32>>,
    /// The new vector's token signs ([`crate::Embedding::token_signs`]); `None` with no new
    /// vector or from a model that gives none.
    pub token_signs: Option<Vec<u8>>,
}

/// A stable 64-bit FNV-1a hash of a rendered text, for telling changed texts from unchanged.
pub fn text_hash(text: &str) -> Vec<u8> {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in text.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash.to_be_bytes().to_vec()
}
