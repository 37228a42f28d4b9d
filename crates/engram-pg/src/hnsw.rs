//! The observation vectors' HNSW indexes: when they are built, and the settings of a search.
//!
//! Vectors of any dimension share one `vector` column; the indexes are partial expression
//! indexes per dimension (`(embedding::vector(384)) … WHERE dims = 384`). PostgreSQL uses them
//! only when a query repeats the expression and the predicate with the dimension as a literal,
//! so search SQL is formatted per dimension.
//!
//! **An index is built once the indexer's queue is empty**, not when the first vector of its
//! dimension is saved: inserting into an HNSW graph one vector at a time took this machine
//! 160–410 vectors a second (a million observations: about 1.5 hours of indexing), while
//! `CREATE INDEX` over the same vectors builds the graph in memory, in parallel. Until then a
//! search compares the query with every vector of its workspace and perspective (exact, slower
//! on a large backlog). Vectors saved after the build go into the index as they are saved.
//!
//! The check starts on the indexer's pass that finds fewer pending pairs than it asked for, at
//! the first such pass of the process (a build interrupted by a stop is finished then) and
//! after vectors of a dimension without a known index were saved, and runs in the background
//! while the indexer goes on. One process builds at a time (an advisory lock); an index a
//! stopped build left invalid is dropped and built again.

use std::collections::HashSet;
use std::sync::Mutex;

use deadpool_postgres::GenericClient;
use engram_domain::Result;
use tracing::info;

use crate::error::db;

/// Candidates the HNSW scan keeps per query; higher is more accurate and slower.
const EF_SEARCH: i32 = 100;

/// Key of the advisory lock held while an index is built ("hnsw").
const BUILD_LOCK: i64 = 0x686e_7377;

/// The most `maintenance_work_mem` a build asks for: the graph of a million 384-dimension
/// vectors takes about 2.2 GB, and a graph that does not fit is built on disk, one insertion
/// at a time (about 180 vectors a second here, against 3,000 in memory).
const MAX_BUILD_MEMORY_KB: i64 = 4 * 1024 * 1024;

/// Bytes of build memory per vector beyond its floats (its neighbour lists and bookkeeping):
/// a build given 1.52 GB for 384-dimension vectors filled it at about 740,000 of them.
const GRAPH_BYTES_PER_VECTOR: f64 = 640.0;

/// What this process knows of the HNSW indexes.
#[derive(Debug)]
pub(crate) struct HnswIndexes {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// Dimensions whose index this process has seen built and valid.
    ready: HashSet<i32>,
    /// Whether the dimensions of the stored vectors are to be checked at the next empty queue.
    unchecked: bool,
    /// Whether this process is checking (and building) now.
    building: bool,
}

impl Default for HnswIndexes {
    fn default() -> Self {
        Self {
            state: Mutex::new(State {
                ready: HashSet::new(),
                unchecked: true,
                building: false,
            }),
        }
    }
}

impl HnswIndexes {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes the dimensions of vectors just saved: one without a known index is checked at
    /// the next empty queue.
    pub(crate) fn saved(&self, dims: &[i32]) {
        let mut state = self.state();
        if dims.iter().any(|d| !state.ready.contains(d)) {
            state.unchecked = true;
        }
    }

    /// Whether a pass of the indexer that found `found` of the `asked` pending pairs is to
    /// start a check of the indexes: the queue is empty, a check is due and none runs. When
    /// it says yes, the caller runs [`HnswIndexes::build_missing`], then
    /// [`HnswIndexes::finished`].
    pub(crate) fn start(&self, found: usize, asked: usize) -> bool {
        let mut state = self.state();
        let due = found < asked && state.unchecked && !state.building;
        state.building |= due;
        due
    }

    /// The check [`HnswIndexes::start`] began has ended.
    pub(crate) fn finished(&self) {
        self.state().building = false;
    }

    /// Builds the index of every dimension of `model`'s stored vectors that has none, and
    /// returns when they are built. Another process building holds the lock: this one checks
    /// again at its next empty queue.
    pub(crate) async fn build_missing(
        &self,
        client: &impl GenericClient,
        model: &str,
    ) -> Result<()> {
        let locked: bool = (client.query_one("SELECT pg_try_advisory_lock($1)", &[&BUILD_LOCK]))
            .await
            .map_err(db)?
            .get(0);
        if !locked {
            return Ok(());
        }
        let built = self.build_locked(client, model).await;
        let unlocked = client
            .execute("SELECT pg_advisory_unlock($1)", &[&BUILD_LOCK])
            .await;
        built?;
        unlocked.map_err(db)?;
        Ok(())
    }

    async fn build_locked(&self, client: &impl GenericClient, model: &str) -> Result<()> {
        // One probe of the (workspace, model, perspective) index per perspective: a model's
        // vectors have one dimension, and this reads no table.
        let dims: Vec<i32> = client
            .query(
                "SELECT DISTINCT e.dims FROM perspectives p
                 CROSS JOIN LATERAL (SELECT dims FROM embeddings e
                                     WHERE e.workspace_id = p.workspace_id AND e.model = $1
                                       AND e.perspective_id = p.id LIMIT 1) e",
                &[&model],
            )
            .await
            .map_err(db)?
            .iter()
            .map(|row| row.get(0))
            .collect();
        for d in dims {
            if !self.state().ready.contains(&d) {
                build(client, d).await?;
                self.state().ready.insert(d);
            }
        }
        self.state().unchecked = false;
        Ok(())
    }
}

/// Builds the index of dimension `dims` unless a valid one exists; drops an invalid one (a
/// build that stopped) first. `CREATE INDEX CONCURRENTLY` cannot run in a transaction, so this
/// takes a plain connection; searches and writes go on during the build. It runs without
/// `statement_timeout` and with enough `maintenance_work_mem` for the graph (within
/// [`MAX_BUILD_MEMORY_KB`]), both reset after.
async fn build(client: &impl GenericClient, dims: i32) -> Result<()> {
    let name = format!("embeddings_hnsw_{dims}");
    match index_state(client, dims).await? {
        Some(true) => return Ok(()),
        Some(false) => {
            info!(index = %name, "dropping an HNSW index a stopped build left invalid");
            client
                .batch_execute(&format!("DROP INDEX CONCURRENTLY IF EXISTS {name}"))
                .await
                .map_err(db)?;
        }
        None => {}
    }
    // The graph's size: the vectors, counted by the statistics (the planner's count may lag a
    // bulk load; the live count kept by the statistics collector does not), with a quarter
    // more for rows still arriving, and their neighbours.
    let rows: f64 = client
        .query_one(
            "SELECT greatest(c.reltuples, s.n_live_tup, 0)::float8
             FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
             WHERE c.oid = 'embeddings'::regclass",
            &[],
        )
        .await
        .map_err(db)?
        .get(0);
    let per_vector = f64::from(dims) * 4.0 + GRAPH_BYTES_PER_VECTOR;
    let needed_kb = (rows * 1.25 * per_vector / 1024.0) as i64;
    let memory_kb = needed_kb.clamp(64 * 1024, MAX_BUILD_MEMORY_KB);
    let started = std::time::Instant::now();
    info!(index = %name, vectors = rows, memory_kb, "building an HNSW index");
    // Separate statements, not one batch: a batch runs as one transaction, which `CREATE
    // INDEX CONCURRENTLY` refuses.
    client
        .batch_execute("SET statement_timeout = 0")
        .await
        .map_err(db)?;
    let built = async {
        let current_kb: i64 = (client.query_one(
            "SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'",
            &[],
        ))
        .await
        .map_err(db)?
        .get(0);
        if memory_kb > current_kb {
            client
                .batch_execute(&format!("SET maintenance_work_mem = '{memory_kb}kB'"))
                .await
                .map_err(db)?;
        }
        client
            .batch_execute(&format!(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON embeddings
                 USING hnsw ((embedding::vector({dims})) vector_cosine_ops)
                 WHERE dims = {dims}"
            ))
            .await
            .map_err(db)
    }
    .await;
    let reset = client
        .batch_execute("RESET statement_timeout; RESET maintenance_work_mem")
        .await;
    built?;
    reset.map_err(db)?;
    info!(index = %name, seconds = started.elapsed().as_secs_f64(), "built an HNSW index");
    // The build follows a bulk load: with statistics from before it, the planner takes the
    // vectors of a workspace for a handful and sorts them all instead of walking the index.
    crate::statistics::analyze(client, &["embeddings".to_owned()]).await
}

/// Whether the HNSW index of dimension `dims` exists (`None` when not) and is valid
/// (`Some(false)` while a concurrent build runs, or after one stopped).
pub(crate) async fn index_state(client: &impl GenericClient, dims: i32) -> Result<Option<bool>> {
    let name = format!("embeddings_hnsw_{dims}");
    let row = client
        .query_opt(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
            &[&name],
        )
        .await
        .map_err(db)?;
    Ok(row.map(|row| row.get(0)))
}

/// Sets the HNSW scan for this transaction: `EF_SEARCH` candidates, and iterative scans,
/// which keep going past rows a filter drops, so a workspace filter still returns k rows
/// (pgvector >= 0.8).
pub(crate) async fn tune_search(client: &impl GenericClient) -> Result<()> {
    client
        .batch_execute(&format!(
            "SET LOCAL hnsw.ef_search = {EF_SEARCH}; SET LOCAL hnsw.iterative_scan = relaxed_order"
        ))
        .await
        .map_err(db)
}
