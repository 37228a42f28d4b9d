//! The indexer: finds (observation, perspective) pairs whose vector is missing or stale,
//! renders them, embeds the changed ones in one batch and stores the results. Writes never
//! wait for it; its state lives in the database, so it survives restarts and an embedder
//! that is down (the pairs simply stay pending).
//!
//! A text the embedder rejects does not hold the others up: when a batch fails while the
//! embedder answers a probe, its texts become suspects: a group per workspace, tried again in
//! halves, one group per pass beside the pass's fresh batch and workspaces in turn, until the
//! rejected texts stand alone; those are set
//! aside (in this process, with their reason) and tried again after a back-off. So finding
//! rejected texts costs each pass at most one extra call, and texts of other workspaces (or
//! other texts of the same one) keep being indexed meanwhile.
//!
//! Each pass first embeds a batch of reflections that lack a vector (one vector per model,
//! [`crate::reflections`]); one the embedder refuses alone is set aside for an hour.

use crate::store::SaveEmbeddings;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::PendingCursor;
use crate::embed::{Embedder, Embedding};
use crate::error::{Error, Result};
use crate::model::{Ordinal, PerspectiveId, RejectedText, WorkspaceId};
use crate::perspectives::render_document;
use crate::retry::Failure;
use crate::store::PendingEmbeddings;
use crate::vectors::IndexStore;
use crate::vectors::{
    EmbeddingRecord, EmbeddingTask, PendingReflection, ReflectionVector, text_hash,
    usual_dimension, vector_defect,
};

/// Keeps a store's vectors for one embedder current. The loop that calls
/// [`Indexer::run_once`] (and sleeps when idle) belongs to the binary.
#[derive(Clone)]
pub struct Indexer {
    store: Arc<dyn IndexStore>,
    embedder: Arc<dyn Embedder>,
    batch_size: usize,
    rejected: Arc<Mutex<HashMap<PairKey, SetAside>>>,
    /// Groups of texts from batches the embedder refused, to try again in halves.
    suspects: Arc<Mutex<VecDeque<Vec<Suspect>>>>,
    /// The workspace of the last group of suspects tried.
    last_suspect: Arc<Mutex<Option<WorkspaceId>>>,
    /// The store's change marker read before the last pass, when that pass found nothing to
    /// embed but the texts set aside, and when it ended; `None` while there is work.
    idle: Arc<Mutex<Option<(i64, Instant)>>>,
    /// Where the sweep of pending pairs stands: the next pass reads on from there.
    cursor: Arc<Mutex<PendingCursor>>,
    /// Reflections the embedder rejected, by id, with when: tried again after
    /// [`MAX_REJECTION_WAIT`].
    rejected_reflections: Arc<Mutex<HashMap<i64, Instant>>>,
}

/// How long an idle pass vouches that nothing is pending (the binary's loop runs a pass at
/// least every 30 s, sooner after any write).
pub const IDLE_VOUCHES_FOR: Duration = Duration::from_secs(60);

/// An (observation, perspective) pair and the hash of the text rendered for it: a changed
/// text is a new key, tried at once.
type PairKey = (i64, PerspectiveId, Vec<u8>);

/// A text the embedder rejected: its failures so far, and where it is (as the task said, so
/// saying so needs no read of the store).
struct SetAside {
    failure: Failure,
    workspace: WorkspaceId,
    name: String,
    ordinal: Ordinal,
    perspective: String,
}

/// A text of a batch the embedder refused while answering a probe: one of them may be the
/// reason.
struct Suspect {
    key: PairKey,
    task: EmbeddingTask,
    text: String,
}

/// The first wait before a rejected text is tried again; doubled per failure up to
/// [`MAX_REJECTION_WAIT`].
const FIRST_REJECTION_WAIT: Duration = Duration::from_secs(60);
/// The longest wait before a rejected text is tried again.
const MAX_REJECTION_WAIT: Duration = Duration::from_secs(3_600);
/// What the embedder is asked when a batch fails, to tell "down" from "rejects a text".
const PROBE: &str = "engram";

impl Indexer {
    /// Resolves when the embedder has become able to answer after being unavailable
    /// ([`Embedder::ready`]): a loop backing off after failed passes can start at once.
    pub async fn embedder_ready(&self) {
        self.embedder.ready().await;
    }

    /// An indexer embedding at most `batch_size` pairs per pass.
    pub fn new(store: Arc<dyn IndexStore>, embedder: Arc<dyn Embedder>, batch_size: usize) -> Self {
        Self {
            store,
            embedder,
            batch_size: batch_size.max(1),
            rejected: Arc::default(),
            suspects: Arc::default(),
            last_suspect: Arc::default(),
            idle: Arc::default(),
            cursor: Arc::default(),
            rejected_reflections: Arc::default(),
        }
    }

    /// The store's change marker at which the last pass found every vector current but those
    /// of the texts set aside ([`Indexer::rejected_in`]), if it did within
    /// [`IDLE_VOUCHES_FOR`]. While the store's marker still reads the same, nothing has been
    /// written since and only the set-aside texts lack a vector.
    pub fn idle_at(&self) -> Option<i64> {
        let idle = *self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.filter(|(_, at)| at.elapsed() < IDLE_VOUCHES_FOR)
            .map(|(marker, _)| marker)
    }

    fn set_idle(&self, idle: Option<(i64, Instant)>) {
        *self.idle.lock().unwrap_or_else(|p| p.into_inner()) = idle;
    }

    /// The texts set aside because the embedder rejected them, as `(observation id,
    /// perspective id, reason)`.
    pub fn rejected(&self) -> Vec<(i64, PerspectiveId, String)> {
        let rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        let mut list: Vec<(i64, PerspectiveId, String)> = (rejected.iter())
            .map(|((observation, perspective, _), r)| {
                (*observation, *perspective, r.failure.reason().to_owned())
            })
            .collect();
        list.sort();
        list
    }

    /// The texts of `workspace` set aside, by node name and ordinal.
    pub fn rejected_in(&self, workspace: WorkspaceId) -> Vec<RejectedText> {
        let rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        let mut texts: Vec<RejectedText> = (rejected.values())
            .filter(|r| r.workspace == workspace)
            .map(|r| RejectedText {
                name: r.name.clone(),
                ordinal: r.ordinal,
                perspective: r.perspective.clone(),
                reason: r.failure.reason().to_owned(),
            })
            .collect();
        texts.sort_by(|a, b| (&a.name, a.ordinal).cmp(&(&b.name, b.ordinal)));
        texts
    }

    /// One pass: how many pairs it brought up to date (0 when nothing was pending).
    ///
    /// Errors: the embedder's or the store's; nothing is lost, the pairs stay pending.
    pub async fn run_once(&self) -> Result<usize> {
        let model = self.embedder.model_id();
        let marker = self.store.change_marker().await.ok();
        let reflections = self.embed_reflections().await?;
        if reflections > 0 {
            self.set_idle(None);
        }
        let mut waiting: HashSet<PairKey> = self.waiting().into_iter().collect();
        waiting.extend(self.suspect_keys());
        let limit = self.batch_size + waiting.len();
        let cursor = self
            .cursor
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let tasks = (self.store)
            .pending_embeddings(PendingEmbeddings {
                model,
                limit,
                cursor: &cursor,
            })
            .await?;
        (self.cursor.lock().unwrap_or_else(|p| p.into_inner())).advance(&tasks);
        let mut records = Vec::with_capacity(tasks.len());
        let mut texts = Vec::new();
        let mut to_embed = Vec::new();
        let mut pending = HashSet::with_capacity(tasks.len());
        for task in &tasks {
            let text = render_document(&task.document_template, &task.context);
            let hash = text_hash(&text);
            let key = (task.observation_id, task.perspective_id, hash.clone());
            pending.insert(key.clone());
            if waiting.contains(&key) || records.len() == self.batch_size {
                continue;
            }
            if task.stored_hash.as_deref() != Some(hash.as_slice()) {
                texts.push(text);
                to_embed.push((records.len(), key, task));
            }
            records.push(EmbeddingRecord {
                observation_id: task.observation_id,
                perspective_id: task.perspective_id,
                text_hash: hash,
                source_updated_at: task.source_updated_at,
                vector: None,
                token_signs: None,
            });
        }
        if tasks.len() < limit {
            self.forget_gone(&pending);
        }
        let suspects = self.next_suspects();
        if records.is_empty() && suspects.is_none() {
            // Everything pending was set aside (or nothing was): idle as of `marker`.
            let idle = tasks.len() < limit;
            let idle = idle && reflections == 0;
            self.set_idle(marker.filter(|_| idle).map(|m| (m, Instant::now())));
            return Ok(reflections);
        }
        self.set_idle(None);
        if !texts.is_empty() {
            match self.embed_checked(&texts).await {
                Ok(embeddings) => {
                    let dimension = usual_dimension_of(embeddings.iter());
                    let mut embedded = to_embed.into_iter().zip(embeddings).peekable();
                    let mut kept = Vec::with_capacity(records.len());
                    for (i, mut record) in records.into_iter().enumerate() {
                        if let Some(((_, key, task), embedding)) =
                            embedded.next_if(|((index, _, _), _)| *index == i)
                        {
                            // A vector that cannot be searched (empty, ragged, NaN, zero) is a
                            // rejected text: it is never stored.
                            if let Some(defect) = vector_defect(&embedding.vector, dimension) {
                                self.reject(key, task, defect);
                                continue;
                            }
                            record.vector = Some(embedding.vector);
                            record.token_signs = embedding.token_signs;
                        }
                        kept.push(record);
                    }
                    records = kept;
                }
                Err(error) => {
                    if let Err(down) = self.embed_checked(&[PROBE.to_owned()]).await {
                        // Down, not picky: nothing is set aside.
                        self.requeue(suspects);
                        return Err(down);
                    }
                    let refused: HashSet<usize> = to_embed.iter().map(|(i, _, _)| *i).collect();
                    let group: Vec<Suspect> = (to_embed.into_iter().zip(texts))
                        .map(|((_, key, task), text)| Suspect {
                            key,
                            task: task.clone(),
                            text,
                        })
                        .collect();
                    self.suspect_by_workspace(group, &error);
                    records = (records.into_iter().enumerate())
                        .filter(|(i, _)| !refused.contains(i))
                        .map(|(_, record)| record)
                        .collect();
                }
            }
        }
        if let Some(group) = suspects {
            records.extend(self.try_suspects(group).await?);
        }
        self.store
            .save_embeddings(SaveEmbeddings {
                model,
                records: &records,
            })
            .await?;
        self.accepted(&records);
        Ok(records.len() + reflections)
    }

    /// Embeds up to a batch of reflections that lack a vector of the model and saves their
    /// vectors; how many. A batch the embedder refuses is tried text by text (after a probe
    /// tells a refusal from an embedder that is down), and a text it refuses alone is set
    /// aside for [`MAX_REJECTION_WAIT`].
    async fn embed_reflections(&self) -> Result<usize> {
        let model = self.embedder.model_id();
        let skip: Vec<i64> = {
            let mut rejected =
                (self.rejected_reflections.lock()).unwrap_or_else(|p| p.into_inner());
            rejected.retain(|_, at| at.elapsed() < MAX_REJECTION_WAIT);
            rejected.keys().copied().collect()
        };
        let pending = (self.store)
            .pending_reflections(model, &skip, self.batch_size)
            .await?;
        if pending.is_empty() {
            return Ok(0);
        }
        let texts: Vec<String> = pending.iter().map(PendingReflection::document).collect();
        let embeddings: Vec<Option<Embedding>> = match self.embed_checked(&texts).await {
            Ok(embeddings) => embeddings.into_iter().map(Some).collect(),
            Err(_) => {
                // Down, not picky: the error is the probe's.
                self.embed_checked(&[PROBE.to_owned()]).await?;
                let mut each = Vec::with_capacity(texts.len());
                for text in &texts {
                    let one = self.embed_checked(std::slice::from_ref(text)).await;
                    each.push(one.ok().and_then(|mut e| e.pop()));
                }
                each
            }
        };
        let dimension = usual_dimension_of(embeddings.iter().flatten());
        let mut vectors = Vec::with_capacity(pending.len());
        for (reflection, embedding) in pending.iter().zip(embeddings) {
            match embedding.filter(|e| vector_defect(&e.vector, dimension).is_none()) {
                Some(embedding) => vectors.push(ReflectionVector {
                    reflection_id: reflection.id,
                    vector: embedding.vector,
                    token_signs: embedding.token_signs,
                }),
                None => {
                    (self.rejected_reflections.lock())
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(reflection.id, Instant::now());
                }
            }
        }
        self.store
            .save_reflection_embeddings(model, &vectors)
            .await?;
        Ok(vectors.len())
    }

    /// Whether texts of a refused batch are still to be tried again (the loop calling
    /// [`Indexer::run_once`] should not wait for a write meanwhile).
    pub fn has_suspects(&self) -> bool {
        !self.lock_suspects().is_empty()
    }

    fn lock_suspects(&self) -> std::sync::MutexGuard<'_, VecDeque<Vec<Suspect>>> {
        self.suspects.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn suspect_keys(&self) -> Vec<PairKey> {
        (self.lock_suspects().iter().flatten())
            .map(|s| s.key.clone())
            .collect()
    }

    /// The next group to try: the first in line of another workspace than the last group
    /// tried, so one workspace's many refused texts never keep another's waiting.
    fn next_suspects(&self) -> Option<Vec<Suspect>> {
        let mut suspects = self.lock_suspects();
        let mut last = self.last_suspect.lock().unwrap_or_else(|p| p.into_inner());
        let workspace = |group: &Vec<Suspect>| group.first().map(|s| s.task.workspace);
        let at = (suspects.iter())
            .position(|group| workspace(group) != *last)
            .unwrap_or(0);
        let group = suspects.remove(at)?;
        *last = workspace(&group);
        Some(group)
    }

    fn requeue(&self, group: Option<Vec<Suspect>>) {
        if let Some(group) = group {
            self.lock_suspects().push_front(group);
        }
    }

    /// A refused fresh batch: a group per workspace, so one workspace's refused text keeps
    /// no other's texts waiting; a batch of one workspace is halved at once.
    fn suspect_by_workspace(&self, group: Vec<Suspect>, error: &Error) {
        let mut groups: Vec<Vec<Suspect>> = Vec::new();
        for suspect in group {
            let workspace = suspect.task.workspace;
            match groups.iter_mut().find(|g| g[0].task.workspace == workspace) {
                Some(group) => group.push(suspect),
                None => groups.push(vec![suspect]),
            }
        }
        if groups.len() == 1 {
            return self.suspect(groups.remove(0), error);
        }
        let mut suspects = self.lock_suspects();
        for group in groups.into_iter().rev() {
            suspects.push_front(group);
        }
    }

    /// A refused group: alone, the text is rejected with the `error`; else its halves are
    /// tried again (first in line).
    fn suspect(&self, mut group: Vec<Suspect>, error: &Error) {
        if group.len() == 1 {
            let Suspect { key, task, .. } = group.remove(0);
            self.reject(key, &task, error.to_string());
            return;
        }
        let right = group.split_off(group.len() / 2);
        let mut suspects = self.lock_suspects();
        suspects.push_front(right);
        suspects.push_front(group);
    }

    /// Tries a group of suspects: their records when the embedder takes them, else the group
    /// split (or its text rejected, once a probe says the embedder is up).
    async fn try_suspects(&self, group: Vec<Suspect>) -> Result<Vec<EmbeddingRecord>> {
        let texts: Vec<String> = group.iter().map(|s| s.text.clone()).collect();
        let embeddings = match self.embed_checked(&texts).await {
            Ok(embeddings) => embeddings,
            Err(error) => {
                if group.len() == 1
                    && let Err(down) = self.embed_checked(&[PROBE.to_owned()]).await
                {
                    self.requeue(Some(group));
                    return Err(down);
                }
                self.suspect(group, &error);
                return Ok(Vec::new());
            }
        };
        let dimension = usual_dimension_of(embeddings.iter());
        let mut records = Vec::with_capacity(group.len());
        for (suspect, embedding) in group.into_iter().zip(embeddings) {
            if let Some(defect) = vector_defect(&embedding.vector, dimension) {
                self.reject(suspect.key, &suspect.task, defect);
                continue;
            }
            records.push(EmbeddingRecord {
                observation_id: suspect.task.observation_id,
                perspective_id: suspect.task.perspective_id,
                text_hash: suspect.key.2,
                source_updated_at: suspect.task.source_updated_at,
                vector: Some(embedding.vector),
                token_signs: embedding.token_signs,
            });
        }
        Ok(records)
    }

    /// Forgets the set-aside texts of pairs now stored (an edited text was accepted, or the
    /// embedder took it on a retry): they are no longer rejected.
    fn accepted(&self, records: &[EmbeddingRecord]) {
        let mut rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        if rejected.is_empty() {
            return;
        }
        let stored: HashSet<(i64, PerspectiveId)> = (records.iter())
            .map(|r| (r.observation_id, r.perspective_id))
            .collect();
        rejected.retain(|(observation, perspective, _), _| {
            !stored.contains(&(*observation, *perspective))
        });
    }

    /// The keys of rejected texts whose back-off has not run out (the others are tried
    /// again).
    fn waiting(&self) -> Vec<PairKey> {
        let rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        (rejected.iter())
            .filter(|(_, r)| r.failure.wait_left().is_some())
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// Forgets the set-aside texts that are no longer pending (their observation was
    /// deleted, or its text changed): `pending` holds the keys of the whole queue.
    fn forget_gone(&self, pending: &HashSet<PairKey>) {
        let mut rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        rejected.retain(|key, _| pending.contains(key));
        let mut suspects = self.lock_suspects();
        suspects
            .iter_mut()
            .for_each(|g| g.retain(|s| pending.contains(&s.key)));
        suspects.retain(|g| !g.is_empty());
    }

    fn reject(&self, key: PairKey, task: &EmbeddingTask, reason: String) {
        let mut rejected = self.rejected.lock().unwrap_or_else(|p| p.into_inner());
        let failure = Failure::after(
            rejected.get(&key).map(|r| &r.failure),
            reason,
            FIRST_REJECTION_WAIT,
            MAX_REJECTION_WAIT,
        );
        let set_aside = SetAside {
            failure,
            workspace: task.workspace,
            name: task.context.name.clone(),
            ordinal: task.context.ordinal,
            perspective: task.perspective_name.clone(),
        };
        rejected.insert(key, set_aside);
    }

    /// `embed_documents_with_tokens`, with the count of vectors checked.
    async fn embed_checked(&self, texts: &[String]) -> Result<Vec<Embedding>> {
        let vectors = self.embedder.embed_documents_with_tokens(texts).await?;
        if vectors.len() != texts.len() {
            return Err(Error::Internal(format!(
                "embedder {} returned {} vectors for {} texts",
                self.embedder.model_id(),
                vectors.len(),
                texts.len()
            )));
        }
        Ok(vectors)
    }

    /// Runs passes until nothing is pending; returns how many pairs were brought up to date.
    /// For tests and `engram reindex`; servers call [`Indexer::run_once`] from their loop.
    pub async fn run_until_idle(&self) -> Result<usize> {
        let mut total = 0;
        loop {
            let done = self.run_once().await?;
            if done == 0 && !self.has_suspects() {
                return Ok(total);
            }
            total += done;
        }
    }
}

/// The dimension most of `embeddings` have.
fn usual_dimension_of<'a>(embeddings: impl Iterator<Item = &'a Embedding>) -> Option<usize> {
    usual_dimension(embeddings.map(|e| e.vector.as_slice()))
}
