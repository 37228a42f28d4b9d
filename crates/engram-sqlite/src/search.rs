//! The searches: nearest observations by vector (sqlite-vec), by full text (FTS5 and bm25),
//! and similar unrelated nodes (exact, over the node aggregates in memory).

use std::collections::HashSet;

use engram_domain::*;
use rusqlite::{Row, Transaction, params};

use crate::nodes::query;
use crate::vectors::{from_blob, has_vec_table, to_blob, vec_table};

/// The largest `k` sqlite-vec accepts in one KNN query.
const MAX_K: usize = 4_096;

/// Words that full-text queries drop, as PostgreSQL's `english` configuration does (its
/// Snowball list): they occur nearly everywhere and would rank every observation.
const STOP_WORDS: &str = include_str!("stop_words.txt");

fn hit(row: &Row<'_>) -> rusqlite::Result<ObservationHit> {
    Ok(ObservationHit {
        name: row.get("name")?,
        entity_type: row.get("entity_type")?,
        summary: row.get("summary")?,
        ordinal: row.get("ordinal")?,
        content: row.get("content")?,
        score: row.get("score")?,
    })
}

/// Cosine similarity; 0 when either vector is all zeros.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut aa, mut bb) = (0.0_f64, 0.0_f64, 0.0_f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        aa += x * x;
        bb += y * y;
    }
    if aa == 0.0 || bb == 0.0 {
        0.0
    } else {
        dot / (aa.sqrt() * bb.sqrt())
    }
}

/// Nearest observations by cosine similarity: a KNN query on the dimension's `vec0` table, or,
/// within one node, its few vectors scored directly.
pub(crate) fn vector_search(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    model: &str,
    perspective: i64,
    vector: &[f32],
    k: usize,
    within: Option<&str>,
) -> Result<Vec<ObservationHit>> {
    let dims = i64::try_from(vector.len()).unwrap_or(i64::MAX);
    if k == 0 || !has_vec_table(tx, dims)? {
        return Ok(Vec::new());
    }
    let Some(node) = within else {
        let sql = include_str!("sql/knn.sql").replace("{table}", &vec_table(dims));
        let k = k.min(MAX_K) as i64;
        return query(
            tx,
            &sql,
            params![workspace.0, model, perspective, to_blob(vector), k],
            hit,
        );
    };
    let mut hits = query(
        tx,
        "SELECT n.name, n.entity_type, n.summary, o.ordinal, o.content, e.embedding
         FROM nodes n
         CROSS JOIN observations o ON o.node_id = n.id
         CROSS JOIN embeddings e ON e.observation_id = o.id
         WHERE n.workspace_id = ?1 AND n.name = ?2
           AND e.model = ?3 AND e.perspective_id = ?4 AND e.dims = ?5",
        params![workspace.0, node, model, perspective, dims],
        |row| {
            let stored = from_blob(&row.get::<_, Vec<u8>>("embedding")?);
            Ok(ObservationHit {
                name: row.get("name")?,
                entity_type: row.get("entity_type")?,
                summary: row.get("summary")?,
                ordinal: row.get("ordinal")?,
                content: row.get("content")?,
                score: cosine(vector, &stored),
            })
        },
    )?;
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.ordinal.cmp(&b.ordinal)));
    hits.truncate(k);
    Ok(hits)
}

/// An FTS5 query matching any of the words of `text` that are not stop words, or `None` when
/// there is no such word.
fn any_word(text: &str) -> Option<String> {
    let mut seen = HashSet::new();
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty() && !STOP_WORDS.split_whitespace().any(|stop| stop == w))
        .filter(|w| seen.insert(w.clone()))
        .map(|w| format!("\"{w}\""))
        .collect();
    (!words.is_empty()).then(|| words.join(" OR "))
}

/// Full-text search: any of the query's words (stemmed, stop words dropped), ranked by bm25
/// (negated, so that higher is better), so a question in plain words still finds the facts
/// that share its terms.
pub(crate) fn text_search(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    text: &str,
    limit: usize,
    within: Option<&str>,
) -> Result<Vec<ObservationHit>> {
    let Some(terms) = any_word(text) else {
        return Ok(Vec::new());
    };
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    query(
        tx,
        "SELECT n.name, n.entity_type, n.summary, o.ordinal, o.content,
                -bm25(observations_fts) AS score
         FROM observations_fts
         JOIN observations o ON o.id = observations_fts.rowid
         JOIN nodes n ON n.id = o.node_id
         WHERE observations_fts MATCH ?2 AND o.workspace_id = ?1
           AND (?4 IS NULL OR n.name = ?4)
         ORDER BY score DESC, n.name, o.ordinal
         LIMIT ?3",
        params![workspace.0, terms, limit, within],
        hit,
    )
}

pub(crate) fn related_pairs(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
) -> Result<Vec<(String, String)>> {
    query(
        tx,
        "SELECT DISTINCT a.name, b.name
         FROM relations r
         JOIN nodes a ON a.id = r.from_node_id
         JOIN nodes b ON b.id = r.to_node_id
         WHERE r.workspace_id = ?1",
        [workspace.0],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )
}
