//! Helpers every module's SQL uses: running a query into a `Vec`, the JSON forms of lists
//! (`json_each` arguments, tags and phrases as stored), and vectors as stored (blobs).

use engram_domain::Result;
use rusqlite::types::Type;
use rusqlite::{Params, Row, Transaction};

use crate::error::db;

/// Runs `sql` and maps every row with `map`.
pub(crate) fn query<T>(
    tx: &Transaction<'_>,
    sql: &str,
    params: impl Params,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<Vec<T>> {
    let mut statement = tx.prepare_cached(sql).map_err(db)?;
    let rows = statement.query_map(params, map).map_err(db)?;
    rows.collect::<rusqlite::Result<_>>().map_err(db)
}

/// A column holding a JSON array of strings (tags, relation phrases).
pub(crate) fn strings(row: &Row<'_>, column: &str) -> rusqlite::Result<Vec<String>> {
    let json: String = row.get(column)?;
    serde_json::from_str(&json).map_err(|e| {
        let index = row.as_ref().column_index(column).unwrap_or(0);
        rusqlite::Error::FromSqlConversionFailure(index, Type::Text, Box::new(e))
    })
}

/// Tags as stored.
pub(crate) fn tags_json(tags: &[String]) -> String {
    serde_json::Value::from(tags).to_string()
}

/// Node ids as a JSON array, for `IN (SELECT value FROM json_each(?))`.
pub(crate) fn id_list(ids: &[i64]) -> String {
    serde_json::Value::from(ids).to_string()
}

/// A vector as sqlite-vec takes and gives it: little-endian `f32`s.
pub(crate) fn to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The inverse of [`to_blob`].
pub(crate) fn from_blob(blob: &[u8]) -> Vec<f32> {
    blob.chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// `WHERE` for the relation `?2 -[?4]-> ?3` of workspace `?1`.
pub(crate) const ONE_RELATION: &str = "workspace_id = ?1
    AND from_node_id = (SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?2)
    AND to_node_id = (SELECT id FROM nodes WHERE workspace_id = ?1 AND name = ?3)
    AND relation_type = ?4";
