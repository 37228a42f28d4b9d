//! What the indexer and a store hand each other about vectors: the pairs to embed, the
//! vectors to save, a node's aggregate vector, the hash that tells a changed text, and the
//! check every vector from an embedder passes before it is stored, cached or searched
//! ([`vector_defect`]).

use async_trait::async_trait;

use crate::error::Result;
use crate::model::{Timestamp, WorkspaceId};
use crate::perspectives::ObservationContext;
use crate::perspectives::Perspective;
use crate::store::*;

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

/// Where the indexer's sweep of the pending pairs stands, so that each pass reads on from where
/// the last one stopped instead of from the first observation again (a pass then costs its
/// batch, not the store's size).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PendingCursor {
    /// The workspace served first last time: the next pass starts with the one after it.
    pub served_first: Option<WorkspaceId>,
    /// Per workspace, the observation id after which its scan goes on (wrapping around to the
    /// first observation when it reaches the last).
    pub after: std::collections::HashMap<WorkspaceId, i64>,
}

impl PendingCursor {
    /// The ranges a pass reads, in order, given every workspace's id in ascending order:
    /// `(workspace, after, up_to)`, the observations with `after < id <= up_to`. Workspaces
    /// come from the one after [`PendingCursor::served_first`] on, wrapping around; each is
    /// read from its cursor to its end, then from its start up to its cursor.
    pub fn ranges(&self, workspaces: &[WorkspaceId]) -> Vec<(WorkspaceId, i64, i64)> {
        let split = self
            .served_first
            .map_or(0, |first| workspaces.partition_point(|w| *w <= first));
        let (before, after) = workspaces.split_at(split);
        let mut ranges = Vec::with_capacity(2 * workspaces.len());
        for &workspace in after.iter().chain(before) {
            let at = self.after.get(&workspace).copied().unwrap_or(0);
            ranges.push((workspace, at, i64::MAX));
            if at > 0 {
                ranges.push((workspace, 0, at));
            }
        }
        ranges
    }

    /// A pass of at most `limit` pairs over [`PendingCursor::ranges`]: the store reads each
    /// range in turn ([`PendingPass::next_read`]) and says how many pairs it found
    /// ([`PendingPass::took`]).
    pub fn pass(&self, workspaces: &[WorkspaceId], limit: usize) -> PendingPass {
        PendingPass {
            ranges: self.ranges(workspaces).into_iter(),
            left: limit,
        }
    }

    /// Moves the cursor past `tasks` (a pass's pending pairs): the next pass starts after the
    /// first workspace served, and in each workspace at its last observation, read again in
    /// case the batch ended among that observation's perspectives.
    pub fn advance(&mut self, tasks: &[EmbeddingTask]) {
        if let Some(first) = tasks.first() {
            self.served_first = Some(first.workspace);
        }
        for task in tasks {
            let after = self.after.entry(task.workspace).or_insert(0);
            *after = (*after).max(task.observation_id - 1);
        }
    }
}

/// One pass of the indexer's sweep ([`PendingCursor::pass`]): the ranges still to read and how
/// many pairs the pass may still take.
#[derive(Debug)]
pub struct PendingPass {
    ranges: std::vec::IntoIter<(WorkspaceId, i64, i64)>,
    left: usize,
}

/// One read of a pass: the pending pairs of `workspace`'s observations with
/// `after < id <= up_to`, at most `most` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PendingRead {
    /// The workspace read.
    pub workspace: WorkspaceId,
    /// Observations after this id…
    pub after: i64,
    /// …up to this one.
    pub up_to: i64,
    /// At most this many pairs (at least 1).
    pub most: i64,
}

impl PendingPass {
    /// The next range to read; `None` once the pass has its pairs or every range was read.
    pub fn next_read(&mut self) -> Option<PendingRead> {
        if self.left == 0 {
            return None;
        }
        let (workspace, after, up_to) = self.ranges.next()?;
        Some(PendingRead {
            workspace,
            after,
            up_to,
            most: i64::try_from(self.left).unwrap_or(i64::MAX),
        })
    }

    /// Counts the `found` pairs the last read answered.
    pub fn took(&mut self, found: usize) {
        self.left = self.left.saturating_sub(found);
    }
}

/// An (observation, perspective) pair whose vector is missing or may be stale.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingTask {
    /// The observation.
    pub observation_id: i64,
    /// Its workspace.
    pub workspace: WorkspaceId,
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

/// Why `vector` cannot be stored or searched, or `None` when it can: it is empty, its length
/// is not `dimension` (when one is expected), a value is not finite (NaN, infinity), or its
/// norm is zero (cosine similarity is undefined). A faulty embedder answers such vectors
/// (issue: a NaN or zero vector once broke every search of its workspace).
pub fn vector_defect(vector: &[f32], dimension: Option<usize>) -> Option<String> {
    if vector.is_empty() {
        return Some("the embedder answered an empty vector".into());
    }
    if let Some(dimension) = dimension
        && vector.len() != dimension
    {
        return Some(format!(
            "the embedder answered a vector of {} dimensions among vectors of {dimension}",
            vector.len()
        ));
    }
    if vector.iter().any(|x| !x.is_finite()) {
        return Some("the embedder answered a vector with a value that is not a number".into());
    }
    if vector.iter().all(|x| *x == 0.0) {
        return Some("the embedder answered a zero vector".into());
    }
    None
}

/// The dimension most of `vectors` have (the first such on a tie), `None` for none.
pub fn usual_dimension<'a>(vectors: impl Iterator<Item = &'a [f32]>) -> Option<usize> {
    let mut counts: Vec<(usize, usize)> = Vec::new();
    for vector in vectors {
        match counts.iter_mut().find(|(d, _)| *d == vector.len()) {
            Some((_, n)) => *n += 1,
            None => counts.push((vector.len(), 1)),
        }
    }
    let most = counts.iter().map(|(_, n)| *n).max()?;
    counts.into_iter().find(|(_, n)| *n == most).map(|(d, _)| d)
}

#[cfg(test)]
mod defect_tests {
    use super::*;

    #[test]
    fn empty_ragged_nan_infinite_and_zero_vectors_are_refused() {
        assert_eq!(vector_defect(&[0.6, 0.8], Some(2)), None);
        assert!(vector_defect(&[], None).unwrap().contains("empty"));
        assert!(
            vector_defect(&[0.6, 0.8, 0.0], Some(2))
                .unwrap()
                .contains("3 dimensions")
        );
        assert!(
            vector_defect(&[f32::NAN, 1.0], None)
                .unwrap()
                .contains("not a number")
        );
        assert!(vector_defect(&[f32::INFINITY, 1.0], None).is_some());
        assert!(
            vector_defect(&[0.0, 0.0], Some(2))
                .unwrap()
                .contains("zero")
        );
    }

    #[test]
    fn the_usual_dimension_is_the_most_common() {
        let vectors = [vec![1.0; 3], vec![1.0; 2], vec![1.0; 3]];
        assert_eq!(usual_dimension(vectors.iter().map(Vec::as_slice)), Some(3));
        assert_eq!(usual_dimension(std::iter::empty()), None);
    }
}

#[cfg(test)]
mod cursor_tests {
    use super::*;

    #[test]
    fn a_pass_reads_ranges_in_turn_until_it_has_its_pairs() {
        let ws = [WorkspaceId(1), WorkspaceId(2)];
        let cursor = PendingCursor {
            served_first: None,
            after: [(ws[0], 5)].into(),
        };
        let mut pass = cursor.pass(&ws, 3);
        let read = |workspace, after, up_to, most| PendingRead {
            workspace,
            after,
            up_to,
            most,
        };
        assert_eq!(pass.next_read(), Some(read(ws[0], 5, i64::MAX, 3)));
        pass.took(2);
        assert_eq!(pass.next_read(), Some(read(ws[0], 0, 5, 1)));
        pass.took(1);
        assert_eq!(pass.next_read(), None, "the pass has its three pairs");
        let mut empty = cursor.pass(&ws, 10);
        let reads = std::iter::from_fn(|| empty.next_read()).count();
        assert_eq!(reads, 3, "every range once when nothing is found");
    }

    #[test]
    fn a_pass_starts_after_the_last_first_and_each_workspace_at_its_cursor() {
        let ws = [WorkspaceId(1), WorkspaceId(2), WorkspaceId(3)];
        // A fresh cursor: every workspace from its start, in id order.
        let fresh = PendingCursor::default();
        assert_eq!(
            fresh.ranges(&ws),
            [
                (ws[0], 0, i64::MAX),
                (ws[1], 0, i64::MAX),
                (ws[2], 0, i64::MAX)
            ]
        );
        let mut cursor = PendingCursor {
            served_first: Some(ws[1]),
            ..PendingCursor::default()
        };
        cursor.after.insert(ws[0], 40);
        // After workspace 2: 3, then around to 1, which reads on from 40, then up to it.
        assert_eq!(
            cursor.ranges(&ws),
            [
                (ws[2], 0, i64::MAX),
                (ws[0], 40, i64::MAX),
                (ws[0], 0, 40),
                (ws[1], 0, i64::MAX)
            ]
        );
        // A workspace served first that is gone since: the next one by id.
        cursor.served_first = Some(WorkspaceId(2));
        let without_two = [ws[0], ws[2]];
        assert_eq!(cursor.ranges(&without_two)[0], (ws[2], 0, i64::MAX));
    }
}

/// What the indexer reads and writes: perspectives, pending (observation, perspective) pairs,
/// vectors and their coverage.
#[async_trait]
pub trait IndexStore: Send + Sync + 'static {
    /// The workspace's perspectives, by name. A workspace starts with
    /// [`crate::perspectives::DEFAULT_PERSPECTIVES`].
    async fn perspectives(&self, workspace: WorkspaceId) -> Result<Vec<Perspective>>;
    /// Creates or changes the workspace's perspective `perspective.name` (its id is ignored)
    /// and returns it as stored. Vectors of changed perspectives become stale and are
    /// re-embedded by the indexer.
    async fn set_perspective(&self, request: SetPerspective<'_>) -> Result<Perspective>;
    /// Up to `limit` (observation, enabled perspective) pairs whose `model` vector is missing
    /// or whose node changed since it was rendered, workspaces in turn: those of the first
    /// workspace after `cursor.served_first` (by id, wrapping around; the first workspace for
    /// `None`) first, then the next workspaces' until `limit` is reached. Within a workspace,
    /// pairs come in observation order from `cursor.after` on, then from its first observation
    /// up to there. The indexer passes the cursor of its last pass ([`PendingCursor`]), so no
    /// workspace waits behind another's backlog for more than a batch, and a pass reads about
    /// its batch's rows, not every observation before them.
    async fn pending_embeddings(
        &self,
        request: PendingEmbeddings<'_>,
    ) -> Result<Vec<EmbeddingTask>>;
    /// Stores the indexer's results for `model` and brings the affected nodes' aggregate
    /// vectors (`node_embeddings`) up to date.
    async fn save_embeddings(&self, request: SaveEmbeddings<'_>) -> Result<()>;
    /// Every node of the workspace that has an aggregate `model` vector in `perspective`
    /// (the mean of its observation vectors), with its type, ordered by name. The
    /// consolidation report clusters these.
    async fn node_vectors(&self, request: GetNodeVectors<'_>) -> Result<Vec<NodeVector>>;
    /// The fraction (0.0–1.0) of the workspace's (observation, enabled perspective) pairs whose
    /// `model` vector is current; 1.0 for a workspace without observations.
    async fn embedding_coverage(&self, request: ModelEmbeddings<'_>) -> Result<f64>;
    /// A number that changes whenever anything is written in any workspace (the newest
    /// event's id × 1,000,003 + the newest reflection's id: a deleted newest reflection and a
    /// new event do not cancel out), so an idle indexer can tell cheaply whether to look for
    /// work.
    async fn change_marker(&self) -> Result<i64>;
    /// Deletes the workspace's `model` vectors (observation and node level), so the indexer
    /// embeds everything again; returns how many observation vectors were dropped.
    async fn clear_embeddings(&self, request: ModelEmbeddings<'_>) -> Result<u64>;
    /// How many (observation, enabled perspective) pairs the workspace has.
    async fn embedding_pairs(&self, workspace: WorkspaceId) -> Result<u64>;
    /// Up to `limit` reflections, of every workspace, without a `model` vector and not in
    /// `skip` (those the embedder rejected), oldest first.
    async fn pending_reflections(
        &self,
        model: &str,
        skip: &[i64],
        limit: usize,
    ) -> Result<Vec<PendingReflection>>;
    /// Stores reflection vectors of `model` (a reflection deleted meanwhile is skipped).
    async fn save_reflection_embeddings(
        &self,
        model: &str,
        vectors: &[ReflectionVector],
    ) -> Result<()>;
}

/// A reflection the indexer is to embed, as the default perspective renders a fact:
/// `"{label}: {content}"` ([`PendingReflection::document`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingReflection {
    /// The reflection's id.
    pub id: i64,
    /// Its node's name, its relation's `from relation_type to`, or empty (the workspace's).
    pub label: String,
    /// Its text.
    pub content: String,
}

impl PendingReflection {
    /// The text embedded: `"{label}: {content}"`, as perspective `general` renders a fact
    /// (`"{name}: {observation}"`), so that a reflection and a fact of one text about one node
    /// score alike; the content alone for the workspace's. A renamed node's reflections keep
    /// the vector of their old name.
    pub fn document(&self) -> String {
        match self.label.is_empty() {
            true => self.content.clone(),
            false => format!("{}: {}", self.label, self.content),
        }
    }
}

/// A reflection's vector, as the indexer saves it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReflectionVector {
    /// The reflection's id.
    pub reflection_id: i64,
    /// Its vector.
    pub vector: Vec<f32>,
    /// Its token signs ([`crate::Embedding::token_signs`]), when the model gives them.
    pub token_signs: Option<Vec<u8>>,
}
