//! An inverted file over each large perspective's observation vectors (migration V8), so that
//! a search does not scan them all: sqlite-vec's `vec0` tables have no index (1.4 s a search
//! at a million observations).
//!
//! Once a perspective holds [`LISTS_FROM`] vectors of a model, a background task builds a
//! set of √n lists: centroids placed by spherical k-means on an even sample
//! ([`Centroids::train`]), then every vector filed under its nearest centroid with an
//! 8-bit code of itself, a batch of [`BATCH`] vectors a transaction. The set serves searches
//! once every vector is filed; vectors written meanwhile are filed as they are saved
//! ([`Filing`]). When the perspective has grown fourfold a new set is built beside the old
//! one, which serves until the new one is ready and is then deleted a list at a time.
//!
//! A search ([`VectorLists::nearest`]) compares the query with the centroids, reads the codes
//! of its [`probes`] nearest lists (stored together), and re-scores the best four times `k`
//! of them exactly from `embeddings`: the similarities returned are exact; a neighbour is
//! missed when it lies in none of the probed lists or its code's score misses the shortlist,
//! and a search returns at most what the probed lists hold. A search narrowed to a node or
//! to types scans as before (`search.rs`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use engram_domain::search::similarity::{self, inverted_file::Centroids, unit};
use engram_domain::{PerspectiveId, Result};
use rusqlite::{OptionalExtension, Transaction, params};

use crate::connection::Pool;
use crate::error::db;
use crate::sql::{from_blob, id_list, query, to_blob};

/// Vectors of one perspective and model from which they get an inverted file: below it the
/// exact scan costs a few milliseconds.
pub(crate) const LISTS_FROM: i64 = similarity::EXACT_UP_TO as i64;

/// A set is built again once its perspective holds this many times the vectors it was built
/// on (the lists grow with √n).
const GROWTH: i64 = 4;

/// Vectors filed per transaction while a set is built.
const BATCH: usize = 4_096;

/// How often saving vectors looks for a perspective that needs a set.
const CHECK_EVERY: Duration = Duration::from_secs(30);

/// Lists a search reads: an eighth of them, at least 8 and at most 32 (17 of 142 at 20,000
/// vectors, 32 of 1,000 at a million: 64 cost 51 ms a search there, 23 cost 20 ms). On
/// 22,081 real sentences (all-MiniLM-L6-v2, 142 lists) recall@10 against the exact answer was
/// 0.90 reading 10 lists, 0.93 reading 15, 0.95 reading 20 (BENCHMARKS.md).
pub(crate) fn probes(lists: usize) -> usize {
    (lists / 8).clamp(8, 32).min(lists)
}

/// The store's inverted files: the centroids of the sets in use, kept between calls, and
/// whether a build is under way.
#[derive(Debug)]
pub(crate) struct VectorLists {
    centroids: Mutex<HashMap<i64, Arc<Centroids>>>,
    building: AtomicBool,
    checked: Mutex<Option<Instant>>,
    /// How often saves and searches look for a due set, in milliseconds ([`CHECK_EVERY`]).
    check_every_ms: AtomicU64,
    /// Set for a short-lived command that only reads: its searches start no build.
    reading_only: AtomicBool,
    lists_from: AtomicI64,
}

impl Default for VectorLists {
    fn default() -> Self {
        Self {
            centroids: Mutex::default(),
            building: AtomicBool::new(false),
            checked: Mutex::default(),
            check_every_ms: AtomicU64::new(CHECK_EVERY.as_millis() as u64),
            reading_only: AtomicBool::new(false),
            lists_from: AtomicI64::new(LISTS_FROM),
        }
    }
}

/// A perspective and model whose vectors need a (new) set of lists.
#[derive(Debug, Clone)]
struct Due {
    workspace: i64,
    perspective: i64,
    model: String,
    dims: i64,
    vectors: i64,
}

impl VectorLists {
    /// Builds sets from `vectors` vectors instead of [`LISTS_FROM`] (tests and benchmarks).
    pub(crate) fn set_lists_from(&self, vectors: i64) {
        self.lists_from.store(vectors.max(1), Ordering::Relaxed);
    }

    /// The newest ready set of `perspective`'s `model` vectors of `dims` dimensions.
    pub(crate) fn ready_set(
        tx: &Transaction<'_>,
        perspective: PerspectiveId,
        model: &str,
        dims: i64,
    ) -> Result<Option<i64>> {
        tx.prepare_cached(
            "SELECT id FROM vector_list_sets
             WHERE perspective_id = ?1 AND model = ?2 AND dims = ?3 AND ready = 1
             ORDER BY id DESC LIMIT 1",
        )
        .and_then(|mut s| s.query_row(params![perspective.0, model, dims], |r| r.get(0)))
        .optional()
        .map_err(db)
    }

    fn centroids(&self, tx: &Transaction<'_>, set: i64) -> Result<Arc<Centroids>> {
        if let Some(kept) = self.kept().get(&set) {
            return Ok(kept.clone());
        }
        let rows = query(
            tx,
            "SELECT centroid FROM vector_lists WHERE set_id = ?1 ORDER BY list",
            [set],
            |row| row.get::<_, Vec<u8>>(0),
        )?;
        let rows: Vec<Vec<f32>> = rows.iter().map(|blob| from_blob(blob)).collect();
        let centroids = Arc::new(Centroids::from_rows(&rows));
        self.kept().insert(set, centroids.clone());
        Ok(centroids)
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, HashMap<i64, Arc<Centroids>>> {
        self.centroids.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The `k` observations of `set` nearest `vector`, as `(observation id, cosine
    /// similarity)`, best first; `None` when the set has no list (the caller scans).
    pub(crate) fn nearest(
        &self,
        tx: &Transaction<'_>,
        set: i64,
        vector: &[f32],
        k: usize,
    ) -> Result<Option<Vec<(i64, f64)>>> {
        let centroids = self.centroids(tx, set)?;
        if centroids.is_empty() {
            return Ok(None);
        }
        let lists = centroids
            .nearest(&[vector], probes(centroids.len()))
            .pop()
            .unwrap_or_default();
        let unit = unit(vector);
        let mut entries = tx
            .prepare_cached(
                "SELECT embedding_id, code FROM vector_list_entries WHERE set_id = ?1 AND list = ?2",
            )
            .map_err(db)?;
        let mut approximate: Vec<(i64, f32)> = Vec::new();
        for list in lists {
            let rows = entries
                .query_map(params![set, list as i64], |row| {
                    let code: Vec<u8> = row.get(1)?;
                    Ok((row.get(0)?, decoded_dot(&code, &unit)))
                })
                .map_err(db)?;
            for row in rows {
                approximate.push(row.map_err(db)?);
            }
        }
        let shortlist = (k * 4).max(k);
        if approximate.len() > shortlist {
            approximate.select_nth_unstable_by(shortlist - 1, |a, b| b.1.total_cmp(&a.1));
            approximate.truncate(shortlist);
        }
        let ids: Vec<i64> = approximate.iter().map(|(id, _)| *id).collect();
        let exact = query(
            tx,
            "SELECT observation_id, embedding FROM embeddings
             WHERE id IN (SELECT value FROM json_each(?1))",
            [id_list(&ids)],
            |row| {
                let stored = from_blob(&row.get::<_, Vec<u8>>(1)?);
                // A zero vector has no direction (the scan leaves it out too).
                let similarity = match stored.iter().any(|x| *x != 0.0) {
                    true => Some(f64::from(similarity::cosine(vector, &stored))),
                    false => None,
                };
                Ok((row.get(0)?, similarity.filter(|s| s.is_finite())))
            },
        )?;
        let mut exact: Vec<(i64, f64)> = (exact.into_iter())
            .filter_map(|(id, similarity): (i64, Option<f64>)| Some((id, similarity?)))
            .collect();
        exact.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        exact.truncate(k);
        Ok(Some(exact))
    }

    /// Starts building the sets that are due, unless a build is under way or the last look was
    /// less than [`CHECK_EVERY`] ago. Failures are logged: searches scan meanwhile.
    pub(crate) fn build_when_due(self: &Arc<Self>, pool: &Arc<Pool>) {
        {
            let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
            let every = Duration::from_millis(self.check_every_ms.load(Ordering::Relaxed));
            if checked.is_some_and(|at| at.elapsed() < every) {
                return;
            }
            *checked = Some(Instant::now());
        }
        if self.building.swap(true, Ordering::AcqRel) {
            return;
        }
        let (lists, pool) = (Arc::clone(self), Arc::clone(pool));
        tokio::spawn(async move {
            if let Err(error) = lists.build_due(&pool).await {
                tracing::warn!(%error, "building the vector lists failed; searches scan meanwhile");
            }
            lists.building.store(false, Ordering::Release);
        });
    }

    /// Makes [`VectorLists::build_when_due_from_search`] start nothing.
    pub(crate) fn reading_only(&self) {
        self.reading_only.store(true, Ordering::Release);
    }

    /// Looks for due sets every `every` instead of [`CHECK_EVERY`] (tests).
    pub(crate) fn check_every(&self, every: Duration) {
        let millis = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
        self.check_every_ms.store(millis, Ordering::Relaxed);
    }

    /// [`VectorLists::build_when_due`] from a search, unless the store only reads: a store
    /// opened on vectors saved without lists (by an older version) builds them, and a build
    /// another process left unfinished (killed) is taken up once it counts as abandoned,
    /// whether or not anything is saved.
    pub(crate) fn build_when_due_from_search(self: &Arc<Self>, pool: &Arc<Pool>) {
        if !self.reading_only.load(Ordering::Acquire) {
            self.build_when_due(pool);
        }
    }

    /// Builds every set that is due, one after another; the number built (a set another
    /// builder is at is left to it).
    pub(crate) async fn build_due(self: &Arc<Self>, pool: &Arc<Pool>) -> Result<usize> {
        let lists_from = self.lists_from.load(Ordering::Relaxed);
        let due = pool.read(move |tx| due(tx, lists_from)).await?;
        let mut built = 0;
        for set in &due {
            built += usize::from(self.build(pool, set.clone()).await?);
        }
        Ok(built)
    }

    /// Whether a set is due or being built (by any builder).
    pub(crate) async fn unsettled(&self, pool: &Arc<Pool>) -> Result<bool> {
        let lists_from = self.lists_from.load(Ordering::Relaxed);
        pool.read(move |tx| {
            let building: bool = tx
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM vector_list_sets
                                    WHERE ready = 0 AND created_at >= engram_now() - ?1)",
                    [ABANDONED_AFTER_MICROS],
                    |r| r.get(0),
                )
                .map_err(db)?;
            Ok(building || !due(tx, lists_from)?.is_empty())
        })
        .await
    }

    /// Builds a set for `due`; whether it did (not when another builder is at it).
    async fn build(self: &Arc<Self>, pool: &Arc<Pool>, due: Due) -> Result<bool> {
        let started = Instant::now();
        let sample = {
            let due = due.clone();
            pool.read(move |tx| sample(tx, &due)).await?
        };
        let lists = (due.vectors as f64).sqrt().round() as usize;
        let centroids = tokio::task::spawn_blocking(move || Centroids::train(&sample, lists))
            .await
            .map_err(crate::error::join)?;
        if centroids.is_empty() {
            return Ok(false);
        }
        let centroids = Arc::new(centroids);
        let set = {
            let (due, centroids) = (due.clone(), centroids.clone());
            pool.write(move |tx| create_set(tx, &due, &centroids))
                .await?
        };
        let Some(set) = set else {
            return Ok(false);
        };
        self.kept().insert(set, centroids.clone());
        // Each batch is read, placed outside any transaction, and written in a short one.
        let mut after = 0;
        loop {
            let batch = {
                let due = due.clone();
                pool.read(move |tx| read_batch(tx, &due, after)).await?
            };
            let Some(last) = batch.last().map(|row| row.id) else {
                break;
            };
            let centroids = centroids.clone();
            let filed = tokio::task::spawn_blocking(move || place(batch, &centroids))
                .await
                .map_err(crate::error::join)?;
            if !pool.write(move |tx| write_batch(tx, set, &filed)).await? {
                // Deleted under the build (the vectors were cleared, or another builder took
                // it for abandoned): nothing to finish.
                self.kept().remove(&set);
                return Ok(false);
            }
            after = last;
        }
        let Some(older) = pool.write(move |tx| make_ready(tx, set)).await? else {
            self.kept().remove(&set);
            return Ok(false);
        };
        for old in older {
            self.kept().remove(&old);
            let count: i64 = pool
                .read(move |tx| {
                    tx.query_row(
                        "SELECT count(*) FROM vector_lists WHERE set_id = ?1",
                        [old],
                        |r| r.get(0),
                    )
                    .map_err(db)
                })
                .await?;
            for list in 0..count {
                pool.write(move |tx| {
                    tx.execute(
                        "DELETE FROM vector_list_entries WHERE set_id = ?1 AND list = ?2",
                        params![old, list],
                    )
                    .map_err(db)
                })
                .await?;
            }
            pool.write(move |tx| {
                tx.execute("DELETE FROM vector_list_sets WHERE id = ?1", [old])
                    .map_err(db)
            })
            .await?;
        }
        tracing::info!(
            perspective = due.perspective,
            model = due.model,
            vectors = due.vectors,
            lists,
            seconds = started.elapsed().as_secs_f64(),
            "built the vector lists"
        );
        Ok(true)
    }
}

/// Files saved vectors under every set of their perspective and model (ready or being built),
/// the centroids read once per save.
pub(crate) struct Filing<'a> {
    lists: &'a VectorLists,
    sets: HashMap<(i64, String, i64), Vec<i64>>,
}

impl<'a> Filing<'a> {
    pub(crate) fn new(lists: &'a VectorLists) -> Self {
        Self {
            lists,
            sets: HashMap::new(),
        }
    }

    /// Files the vector of `embeddings` row `id`; a row saved again (`replaced`) loses its
    /// earlier entries first.
    pub(crate) fn file(
        &mut self,
        tx: &Transaction<'_>,
        id: i64,
        replaced: bool,
        perspective: i64,
        model: &str,
        vector: &[f32],
    ) -> Result<()> {
        if replaced {
            tx.prepare_cached("DELETE FROM vector_list_entries WHERE embedding_id = ?1")
                .and_then(|mut s| s.execute([id]))
                .map_err(db)?;
        }
        let dims = i64::try_from(vector.len()).unwrap_or(i64::MAX);
        let key = (perspective, model.to_owned(), dims);
        if !self.sets.contains_key(&key) {
            let sets = query(
                tx,
                "SELECT id FROM vector_list_sets
                 WHERE perspective_id = ?1 AND model = ?2 AND dims = ?3",
                params![perspective, model, dims],
                |row| row.get(0),
            )?;
            self.sets.insert(key.clone(), sets);
        }
        for &set in &self.sets[&key] {
            let centroids = self.lists.centroids(tx, set)?;
            let list = centroids
                .nearest(&[vector], 1)
                .pop()
                .and_then(|near| near.first().copied())
                .unwrap_or(0);
            tx.prepare_cached(
                "INSERT OR REPLACE INTO vector_list_entries (set_id, list, embedding_id, code)
                 VALUES (?1, ?2, ?3, ?4)",
            )
            .and_then(|mut s| s.execute(params![set, list as i64, id, code(vector)]))
            .map_err(db)?;
        }
        Ok(())
    }
}

/// The perspectives and models that hold `lists_from` vectors or more and have no set, or a
/// set built on less than a [`GROWTH`]th of them.
fn due(tx: &Transaction<'_>, lists_from: i64) -> Result<Vec<Due>> {
    let counted = query(
        tx,
        // Counted from the `(workspace_id, model, perspective_id)` index alone (grouping by
        // `dims` too read every vector row: 1.6 GB at a million); a model's vectors have one
        // dimension, read from one of them. An index with `dims` was tried: SQLite's planner,
        // without statistics, took it for a perspective's candidate vectors (881 ms a search).
        "SELECT c.workspace_id, c.perspective_id, c.model,
                (SELECT e.dims FROM embeddings e
                 WHERE e.workspace_id = c.workspace_id AND e.model = c.model
                   AND e.perspective_id = c.perspective_id LIMIT 1),
                c.vectors
         FROM (SELECT workspace_id, perspective_id, model, count(*) AS vectors
               FROM embeddings GROUP BY workspace_id, model, perspective_id
               HAVING count(*) >= ?1) c",
        [lists_from],
        |row| {
            Ok(Due {
                workspace: row.get(0)?,
                perspective: row.get(1)?,
                model: row.get(2)?,
                dims: row.get(3)?,
                vectors: row.get(4)?,
            })
        },
    )?;
    let mut due = Vec::new();
    for candidate in counted {
        if is_due(tx, &candidate)? {
            due.push(candidate);
        }
    }
    Ok(due)
}

/// Whether `due`'s vectors have no ready set, or one built on less than a [`GROWTH`]th of
/// them.
fn is_due(tx: &Transaction<'_>, due: &Due) -> Result<bool> {
    let built: Option<i64> = tx
        .prepare_cached(
            "SELECT max(vectors) FROM vector_list_sets
             WHERE perspective_id = ?1 AND model = ?2 AND dims = ?3 AND ready = 1",
        )
        .and_then(|mut s| s.query_row(params![due.perspective, due.model, due.dims], |r| r.get(0)))
        .map_err(db)?;
    Ok(built.is_none_or(|built| due.vectors >= GROWTH * built))
}

/// The statement reading a perspective's vectors in id order after `?5`.
const IN_ORDER: &str = "
SELECT id, embedding, embedded_at FROM embeddings
WHERE workspace_id = ?1 AND model = ?2 AND perspective_id = ?3 AND dims = ?4 AND id > ?5
ORDER BY id LIMIT ?6";

/// Vectors spread evenly over the perspective's, for placing the centroids.
fn sample(tx: &Transaction<'_>, due: &Due) -> Result<Vec<Vec<f32>>> {
    let ids = query(
        tx,
        "SELECT id FROM embeddings
         WHERE workspace_id = ?1 AND model = ?2 AND perspective_id = ?3 AND dims = ?4
         ORDER BY id",
        params![due.workspace, due.model, due.perspective, due.dims],
        |row| row.get::<_, i64>(0),
    )?;
    let size = ids.len().min(16_384);
    let picked: Vec<i64> = (0..size).map(|s| ids[s * ids.len() / size]).collect();
    query(
        tx,
        "SELECT embedding FROM embeddings WHERE id IN (SELECT value FROM json_each(?1))",
        [id_list(&picked)],
        |row| Ok(from_blob(&row.get::<_, Vec<u8>>(0)?)),
    )
}

/// How long a set may stay unready, its builder silent, before the next builder takes it for
/// abandoned (a builder marks its set alive with each batch of [`BATCH`] vectors, which takes
/// well under a second): two minutes, then the next save or search of a running process
/// builds it again.
const ABANDONED_AFTER_MICROS: i64 = 120_000_000;

/// A new set (not ready) with its centroids; its id, or `None` when another builder (this
/// process or another on the file) is building one for the same vectors.
fn create_set(tx: &Transaction<'_>, due: &Due, centroids: &Centroids) -> Result<Option<i64>> {
    tx.execute(
        "DELETE FROM vector_list_sets
         WHERE perspective_id = ?1 AND model = ?2 AND ready = 0
           AND created_at < engram_now() - ?3",
        params![due.perspective, due.model, ABANDONED_AFTER_MICROS],
    )
    .map_err(db)?;
    let building: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM vector_list_sets
                            WHERE perspective_id = ?1 AND model = ?2 AND ready = 0)",
            params![due.perspective, due.model],
            |r| r.get(0),
        )
        .map_err(db)?;
    // Another builder may have finished since the work was found due.
    if building || !is_due(tx, due)? {
        return Ok(None);
    }
    let set: i64 = tx
        .query_row(
            "INSERT INTO vector_list_sets (perspective_id, model, dims, vectors, created_at)
             VALUES (?1, ?2, ?3, ?4, engram_now()) RETURNING id",
            params![due.perspective, due.model, due.dims, due.vectors],
            |r| r.get(0),
        )
        .map_err(db)?;
    for (list, centroid) in centroids.rows().enumerate() {
        tx.prepare_cached("INSERT INTO vector_lists (set_id, list, centroid) VALUES (?1, ?2, ?3)")
            .and_then(|mut s| s.execute(params![set, list as i64, to_blob(&centroid)]))
            .map_err(db)?;
    }
    Ok(Some(set))
}

/// A stored vector as a build reads it.
struct Stored {
    id: i64,
    vector: Vec<f32>,
    embedded_at: i64,
}

/// A vector placed in its list, with its code.
struct Placed {
    id: i64,
    embedded_at: i64,
    list: i64,
    code: Vec<u8>,
}

/// The next [`BATCH`] vectors of `due` after id `after`, in id order.
fn read_batch(tx: &Transaction<'_>, due: &Due, after: i64) -> Result<Vec<Stored>> {
    query(
        tx,
        IN_ORDER,
        params![
            due.workspace,
            due.model,
            due.perspective,
            due.dims,
            after,
            BATCH as i64
        ],
        |row| {
            Ok(Stored {
                id: row.get(0)?,
                vector: from_blob(&row.get::<_, Vec<u8>>(1)?),
                embedded_at: row.get(2)?,
            })
        },
    )
}

/// Each vector's nearest list and code.
fn place(batch: Vec<Stored>, centroids: &Centroids) -> Vec<Placed> {
    let vectors: Vec<&[f32]> = batch.iter().map(|row| row.vector.as_slice()).collect();
    let nearest = centroids.nearest(&vectors, 1);
    (batch.iter().zip(nearest))
        .map(|(row, near)| Placed {
            id: row.id,
            embedded_at: row.embedded_at,
            list: near.first().copied().unwrap_or(0) as i64,
            code: code(&row.vector),
        })
        .collect()
}

/// Files `placed` under `set`, each only while its vector is the one that was read: a vector
/// deleted or saved again since is left to its save. Marks the set alive (its `created_at`);
/// `false`, filing nothing, when the set is gone.
fn write_batch(tx: &Transaction<'_>, set: i64, placed: &[Placed]) -> Result<bool> {
    let alive = tx
        .execute(
            "UPDATE vector_list_sets SET created_at = engram_now() WHERE id = ?1",
            [set],
        )
        .map_err(db)?;
    if alive == 0 {
        return Ok(false);
    }
    let mut insert = tx
        .prepare_cached(
            "INSERT OR IGNORE INTO vector_list_entries (set_id, list, embedding_id, code)
             SELECT ?1, ?2, id, ?4 FROM embeddings WHERE id = ?3 AND embedded_at = ?5",
        )
        .map_err(db)?;
    for p in placed {
        insert
            .execute(params![set, p.list, p.id, p.code, p.embedded_at])
            .map_err(db)?;
    }
    Ok(true)
}

/// Marks `set` ready; the older sets of its perspective, model and dimension, to delete
/// (`None` when the set is gone).
fn make_ready(tx: &Transaction<'_>, set: i64) -> Result<Option<Vec<i64>>> {
    let marked = tx
        .execute("UPDATE vector_list_sets SET ready = 1 WHERE id = ?1", [set])
        .map_err(db)?;
    if marked == 0 {
        return Ok(None);
    }
    query(
        tx,
        "SELECT old.id FROM vector_list_sets old
         JOIN vector_list_sets new ON new.id = ?1
         WHERE old.perspective_id = new.perspective_id AND old.model = new.model
           AND old.dims = new.dims AND old.id <> new.id",
        [set],
        |row| row.get(0),
    )
    .map(Some)
}

/// The 8-bit code of `vector`: a little-endian `f32` scale, then each component of the unit
/// vector ÷ scale as a signed byte (the largest at ±127).
fn code(vector: &[f32]) -> Vec<u8> {
    let unit = unit(vector);
    let largest = unit.iter().fold(0.0_f32, |m, x| m.max(x.abs()));
    let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
    let mut out = Vec::with_capacity(4 + unit.len());
    out.extend_from_slice(&scale.to_le_bytes());
    out.extend(unit.iter().map(|x| (x / scale).round() as i8 as u8));
    out
}

/// The dot product of a [`code`] with the unit vector `unit`: about the cosine similarity of
/// the coded vector and `unit`. A code of another dimension scores 0.
fn decoded_dot(code: &[u8], unit: &[f32]) -> f32 {
    if code.len() != 4 + unit.len() {
        return 0.0;
    }
    let scale = f32::from_le_bytes([code[0], code[1], code[2], code[3]]);
    let sum: f32 = (code[4..].iter().zip(unit))
        .map(|(&q, &x)| f32::from(q as i8) * x)
        .sum();
    sum * scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_code_keeps_the_cosine_to_two_decimals() {
        let a: Vec<f32> = (0..384)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0)
            .collect();
        let b: Vec<f32> = (0..384)
            .map(|i| ((i * 53 % 97) as f32 - 48.0) / 3.0)
            .collect();
        for (x, y) in [(&a, &b), (&a, &a), (&b, &a)] {
            let exact = similarity::cosine(x, y);
            let coded = decoded_dot(&code(x), &unit(y));
            assert!((exact - coded).abs() < 0.01, "{exact} against {coded}");
        }
        assert_eq!(decoded_dot(&code(&a), &unit(&a[..100])), 0.0);
        assert_eq!(probes(10), 8);
        assert_eq!(probes(142), 17);
        assert_eq!(probes(1_000), 32);
        assert_eq!(probes(3), 3);
    }
}
