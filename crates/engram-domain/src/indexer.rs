//! The indexer: finds (observation, perspective) pairs whose vector is missing or stale,
//! renders them, embeds the changed ones in one batch and stores the results. Writes never
//! wait for it; its state lives in the database, so it survives restarts and an embedder
//! that is down (the pairs simply stay pending).
//!
//! A text the embedder rejects does not hold the others up: when a batch fails while the
//! embedder answers a probe, the batch is split in halves until the rejected texts stand
//! alone; those are set aside (in this process, with their reason) and tried again after a
//! back-off, and everything else is stored.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::embed::{Embedder, Embedding};
use crate::error::{Error, Result};
use crate::model::{Ordinal, PerspectiveId, RejectedText, WorkspaceId};
use crate::perspectives::render_document;
use crate::retry::Failure;
use crate::store::MemoryStore;
use crate::vectors::{EmbeddingRecord, EmbeddingTask, text_hash};

/// Keeps a store's vectors for one embedder current. The loop that calls
/// [`Indexer::run_once`] (and sleeps when idle) belongs to the binary.
#[derive(Clone)]
pub struct Indexer {
    store: Arc<dyn MemoryStore>,
    embedder: Arc<dyn Embedder>,
    batch_size: usize,
    rejected: Arc<Mutex<HashMap<PairKey, SetAside>>>,
    /// The store's change marker read before the last pass, when that pass found nothing to
    /// embed but the texts set aside, and when it ended; `None` while there is work.
    idle: Arc<Mutex<Option<(i64, Instant)>>>,
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
    pub fn new(
        store: Arc<dyn MemoryStore>,
        embedder: Arc<dyn Embedder>,
        batch_size: usize,
    ) -> Self {
        Self {
            store,
            embedder,
            batch_size: batch_size.max(1),
            rejected: Arc::default(),
            idle: Arc::default(),
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
        let waiting = self.waiting();
        let limit = self.batch_size + waiting.len();
        let tasks = self.store.pending_embeddings(model, limit).await?;
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
        if records.is_empty() {
            // Everything pending was set aside (or nothing was): idle as of `marker`.
            let idle = tasks.len() < limit;
            self.set_idle(marker.filter(|_| idle).map(|m| (m, Instant::now())));
            return Ok(0);
        }
        self.set_idle(None);
        if !texts.is_empty() {
            let vectors = self.embed_isolating(&texts).await?;
            // A vector that cannot be searched (empty, ragged, NaN, zero) is a rejected text:
            // it is never stored.
            let dimension = crate::vectors::usual_dimension(
                (vectors.iter().flatten()).map(|embedding| embedding.vector.as_slice()),
            );
            let mut kept = Vec::with_capacity(records.len());
            let mut embedded = to_embed.into_iter().zip(vectors).peekable();
            for (i, mut record) in records.into_iter().enumerate() {
                match embedded.next_if(|((index, _, _), _)| *index == i) {
                    Some(((_, key, task), Ok(embedding))) => {
                        if let Some(defect) =
                            crate::vectors::vector_defect(&embedding.vector, dimension)
                        {
                            self.reject(key, task, defect);
                            continue;
                        }
                        record.vector = Some(embedding.vector);
                        record.token_signs = embedding.token_signs;
                    }
                    Some(((_, key, task), Err(reason))) => {
                        self.reject(key, task, reason);
                        continue;
                    }
                    None => {}
                }
                kept.push(record);
            }
            records = kept;
        }
        self.store.save_embeddings(model, &records).await?;
        self.accepted(&records);
        Ok(records.len())
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

    /// Embeds `texts`; when the batch fails but the embedder answers a probe, splits it until
    /// each rejected text stands alone and returns its reason in its place. When the probe
    /// fails too, the embedder is down: the error is returned and nothing is set aside.
    async fn embed_isolating(
        &self,
        texts: &[String],
    ) -> Result<Vec<std::result::Result<Embedding, String>>> {
        match self.embed_checked(texts).await {
            Ok(vectors) => Ok(vectors.into_iter().map(Ok).collect()),
            Err(error) => {
                // Down, not picky: nothing is set aside.
                self.embed_checked(&[PROBE.to_owned()]).await?;
                Ok(self.bisect(texts, error).await)
            }
        }
    }

    /// Splits a batch that failed with `error` (the embedder being up) into halves, down to
    /// single texts, which get the error's text as their reason.
    fn bisect<'a>(
        &'a self,
        texts: &'a [String],
        error: Error,
    ) -> futures::future::BoxFuture<'a, Vec<std::result::Result<Embedding, String>>> {
        Box::pin(async move {
            if texts.len() == 1 {
                return vec![Err(error.to_string())];
            }
            let (left, right) = texts.split_at(texts.len() / 2);
            let mut out = Vec::with_capacity(texts.len());
            for half in [left, right] {
                match self.embed_checked(half).await {
                    Ok(vectors) => out.extend(vectors.into_iter().map(Ok)),
                    Err(error) => out.extend(self.bisect(half, error).await),
                }
            }
            out
        })
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
            if done == 0 {
                return Ok(total);
            }
            total += done;
        }
    }
}
