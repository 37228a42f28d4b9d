//! One search's candidates ([`SearchStore::search`]: nearest observations by vector with
//! sqlite-vec, best matches by full text with FTS5 and bm25), and the pairs of related nodes.

use std::collections::HashSet;

use async_trait::async_trait;
use engram_domain::search::words;
use engram_domain::search::{
    CandidateQuery, CandidateSet, Gathered, NAMED_FACTS, NAMED_NODES, ObservationRow, QueryVector,
    StoredVector, name_probe,
};
use engram_domain::*;
use rusqlite::{Row, Transaction, params, params_from_iter};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::sql::{from_blob, id_list, query, tags_json, to_blob};
use crate::vector_lists::VectorLists;
use crate::vectors::{has_vec_table, vec_table};

/// The largest `k` sqlite-vec accepts in one KNN query.
const MAX_K: usize = 4_096;

/// Full-text matches a search ([`SearchStore::search`]) ranks in one query: the first
/// `text_depth` become candidates, the others lend their scores to candidates the embeddings
/// found ([`CandidateSet::add_text_ranking`]). FTS5 scores every match to rank the best few
/// and costs as much again to score chosen rows, so one deeper ranking saves a query; a second
/// one for the missing scores runs only when a query matches more than this.
const TEXT_RANKING_LIMIT: usize = 2_000;

/// A row of `(observation id, score)`.
fn id_score(row: &Row<'_>) -> rusqlite::Result<(i64, f64)> {
    Ok((row.get(0)?, row.get(1)?))
}

fn id_similarity(row: &Row<'_>) -> rusqlite::Result<(i64, Option<f64>)> {
    Ok((row.get(0)?, row.get(1)?))
}

/// The rows that have a similarity: a zero or NaN vector stored by an older engram has none
/// (NULL) and is skipped, never an error.
fn scored(rows: Vec<(i64, Option<f64>)>) -> Vec<(i64, f64)> {
    (rows.into_iter())
        .filter_map(|(id, similarity)| Some((id, similarity?)))
        .collect()
}

/// Which facts a search sees: the current ones, or with `as_of` (microseconds) those that
/// held then, each text as it read then.
#[derive(Debug, Clone, Copy)]
struct Seen {
    as_of: Option<i64>,
    /// The indexes may hold facts the search does not see (the workspace holds facts that are
    /// not current, or the search is of a past time): what they find is sifted.
    sift: bool,
}

impl Seen {
    /// What `request` sees in `workspace`. Whether the workspace holds facts that are not
    /// current (ended, or expired and not purged yet) is an index probe: only then do the
    /// nearest vectors and the text ranking, which know nothing of time, have any to leave
    /// out of a search of the present.
    fn of(tx: &Transaction<'_>, workspace: WorkspaceId, request: &CandidateQuery) -> Result<Self> {
        let as_of = request.as_of.map(crate::micros);
        let sift = as_of.is_some()
            || (tx.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM observations
                                WHERE workspace_id = ?1 AND valid_to IS NOT NULL
                                  AND valid_to <= engram_now())",
            ))
            .and_then(|mut statement| statement.query_row([workspace.0], |row| row.get(0)))
            .map_err(db)?;
        Ok(Self { as_of, sift })
    }

    /// The SQL condition that the observation `o` is one the search sees; for a search of a
    /// past time, the time is parameter `?{at}` (bind [`Seen::as_of`] there).
    fn condition(self, at: usize) -> String {
        match self.as_of {
            None => "(o.valid_to IS NULL OR o.valid_to > engram_now())".to_owned(),
            Some(_) => {
                format!("o.valid_from <= ?{at} AND (o.valid_to IS NULL OR o.valid_to > ?{at})")
            }
        }
    }

    /// The observations among `ids` the search sees.
    fn among(self, tx: &Transaction<'_>, ids: &[i64]) -> Result<HashSet<i64>> {
        let sql = format!(
            "SELECT o.id FROM observations o
             WHERE o.id IN (SELECT value FROM json_each(?1)) AND {}",
            self.condition(2)
        );
        let seen = match self.as_of {
            None => query(tx, &sql, [id_list(ids)], |row| row.get(0))?,
            Some(at) => query(tx, &sql, params![id_list(ids), at], |row| row.get(0))?,
        };
        Ok(seen.into_iter().collect())
    }

    /// The `k` nearest facts the search sees, from `search(depth)` (the `depth` nearest
    /// vectors of any fact): what it finds when there is nothing to sift; else that less the
    /// facts the search does not see, searched again twice as deep (up to [`MAX_K`]) while
    /// those crowd out the others, best first.
    fn nearest(
        self,
        tx: &Transaction<'_>,
        k: usize,
        mut search: impl FnMut(usize) -> Result<Vec<(i64, f64)>>,
    ) -> Result<Vec<(i64, f64)>> {
        let mut depth = k.min(MAX_K);
        loop {
            let mut found = search(depth)?;
            if !self.sift {
                return Ok(found);
            }
            let deepest = found.len() < depth || depth == MAX_K;
            let ids: Vec<i64> = found.iter().map(|(id, _)| *id).collect();
            let seen = self.among(tx, &ids)?;
            found.retain(|(id, _)| seen.contains(id));
            if found.len() >= k || deepest {
                found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                found.truncate(k);
                return Ok(found);
            }
            depth = (depth * 2).min(MAX_K);
        }
    }
}

/// The types a search keeps as a JSON array for `json_each`, or `None` for every type.
fn types_json(request: &CandidateQuery) -> Option<String> {
    request.types().map(tags_json)
}

/// The `request.depth` facts the search sees nearest `vector` in `perspective` as
/// `(observation id, cosine similarity)`: from the perspective's inverted file when it has
/// one ([`VectorLists`]), else a KNN query on the dimension's `vec0` table for the whole
/// workspace, either sifted ([`Seen::nearest`]); or an exact scan of the facts a narrowed
/// search keeps.
fn nearest(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    request: &CandidateQuery,
    perspective: PerspectiveId,
    vector: &[f32],
    lists: &VectorLists,
    seen: Seen,
) -> Result<Vec<(i64, f64)>> {
    let (model, k) = (&request.model, request.depth);
    let dims = i64::try_from(vector.len()).unwrap_or(i64::MAX);
    if k == 0 || !has_vec_table(tx, dims)? {
        return Ok(Vec::new());
    }
    if !request.is_narrowed() {
        let set = VectorLists::ready_set(tx, perspective, model, dims)?;
        let sql = include_str!("sql/knn.sql").replace("{table}", &vec_table(dims));
        return seen.nearest(tx, k, |depth| {
            if let Some(set) = set
                && let Some(found) = lists.nearest(tx, set, vector, depth)?
            {
                return Ok(found);
            }
            let depth = depth as i64;
            query(
                tx,
                &sql,
                params![workspace.0, model, perspective.0, to_blob(vector), depth],
                id_similarity,
            )
            .map(scored)
        });
    }
    let sql = format!(
        "SELECT e.observation_id, 1.0 - vec_distance_cosine(e.embedding, ?4) AS similarity
         FROM nodes n
         CROSS JOIN observations o ON o.node_id = n.id
         CROSS JOIN embeddings e ON e.observation_id = o.id
         WHERE n.workspace_id = ?1 AND e.model = ?2 AND e.perspective_id = ?3 AND e.dims = ?5
           AND (?6 IS NULL OR n.name = ?6)
           AND (?7 IS NULL OR n.entity_type IN (SELECT value FROM json_each(?7)))
           AND {}
         ORDER BY similarity DESC, e.observation_id
         LIMIT ?8",
        seen.condition(9)
    );
    let (blob, types) = (to_blob(vector), types_json(request));
    let k = i64::try_from(k).unwrap_or(i64::MAX);
    let mut parameters: Vec<&dyn rusqlite::ToSql> = vec![
        &workspace.0,
        model,
        &perspective.0,
        &blob,
        &dims,
        &request.within,
        &types,
        &k,
    ];
    if let Some(at) = &seen.as_of {
        parameters.push(at);
    }
    query(tx, &sql, params_from_iter(parameters), id_similarity).map(scored)
}

/// The stored vectors of the given observations in `query`'s perspective, model and
/// dimension, with their token signs when the query has some.
fn candidate_vectors(
    tx: &Transaction<'_>,
    ids: &[i64],
    model: &str,
    query_vector: &QueryVector,
) -> Result<Vec<StoredVector>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let signs = match query_vector.token_signs {
        Some(_) => "e.token_signs",
        None => "NULL",
    };
    query(
        tx,
        &format!(
            "SELECT e.observation_id, e.embedding, {signs}
             FROM embeddings e
             WHERE e.observation_id IN (SELECT value FROM json_each(?1))
               AND e.model = ?2 AND e.perspective_id = ?3 AND e.dims = ?4"
        ),
        params![
            id_list(ids),
            model,
            query_vector.perspective.0,
            i64::try_from(query_vector.vector.len()).unwrap_or(i64::MAX)
        ],
        |row| {
            Ok(StoredVector {
                observation_id: row.get(0)?,
                vector: from_blob(&row.get::<_, Vec<u8>>(1)?),
                token_signs: row.get(2)?,
            })
        },
    )
}

/// The observations `ids` the search sees, with their nodes; in a search of a past time,
/// each text as it read then (the version `replace_observation` replaced first after that
/// time, else the text now).
fn observation_rows(tx: &Transaction<'_>, ids: &[i64], seen: Seen) -> Result<Vec<ObservationRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let row = |row: &Row<'_>| {
        Ok(ObservationRow {
            observation_id: row.get(0)?,
            name: row.get(1)?,
            entity_type: row.get(2)?,
            summary: row.get(3)?,
            ordinal: Ordinal(row.get(4)?),
            content: row.get(5)?,
            created_at: crate::timestamp(row.get(6)?),
            valid_from: crate::timestamp(row.get(7)?),
        })
    };
    let Some(at) = seen.as_of else {
        return query(
            tx,
            "SELECT o.id, n.name, n.entity_type, n.summary, o.ordinal, o.content, o.created_at,
                    o.valid_from
             FROM observations o
             JOIN nodes n ON n.id = o.node_id
             WHERE o.id IN (SELECT value FROM json_each(?1))
               AND (o.valid_to IS NULL OR o.valid_to > engram_now())",
            [id_list(ids)],
            row,
        );
    };
    query(
        tx,
        "SELECT o.id, n.name, n.entity_type, n.summary, o.ordinal,
                coalesce((SELECT v.content FROM observation_versions v
                          WHERE v.observation_id = o.id AND v.replaced_at > ?2
                          ORDER BY v.replaced_at LIMIT 1),
                         o.content),
                o.created_at, o.valid_from
         FROM observations o
         JOIN nodes n ON n.id = o.node_id
         WHERE o.id IN (SELECT value FROM json_each(?1))
           AND o.valid_from <= ?2 AND (o.valid_to IS NULL OR o.valid_to > ?2)",
        params![id_list(ids), at],
        row,
    )
}

/// A search's FTS5 query: any of the words of `text` that are not stop words, less those that
/// more than half of all observations (and more than [`words::COMMON_TERM_FLOOR`]) contain
/// unless every word is one, and less the frequent ones ([`words::is_frequent_term`]) unless
/// every word left is one.
///
/// FTS5 scores every match of a query to rank them, and weighs each word by counting the texts
/// that hold it: a word in a fifth of a million texts took 177 ms, and 518 ms for one in two
/// thirds. So a frequent word is left out of a query that has rarer words (they rank what
/// matters; PostgreSQL, which scores a text by itself, ranks the frequent word's first matches
/// too), and a query of frequent words alone ranks its first matches ([`TextTerms::capped`]).
struct TextTerms {
    /// The FTS5 query.
    query: String,
    /// Every word of it is frequent: only the first [`words::FREQUENT_TERM_RANKED`] texts
    /// matching it are ranked.
    capped: bool,
}

/// The [`TextTerms`] of `text`; `None` when it has no word. A word's matches are counted by
/// FTS5 only up to the point where it is frequent (or, in a query of several words, common),
/// so a rare word costs a few index pages.
fn text_terms(tx: &Transaction<'_>, text: &str) -> Result<Option<TextTerms>> {
    let mut seen = HashSet::new();
    let mut terms: Vec<String> = words::words(&words::with_cjk_bigrams(text))
        .filter(|w| !words::is_stop_word(w))
        .filter(|w| seen.insert(w.clone()))
        .map(|w| format!("\"{w}\""))
        .collect();
    if terms.is_empty() {
        return Ok(None);
    }
    let total = crate::nodes::observations_in_file(tx)?;
    if total <= words::FREQUENT_TERM_RANKED {
        return Ok(Some(TextTerms {
            query: terms.join(" OR "),
            capped: false,
        }));
    }
    // Only a query of several words leaves the common ones out.
    let common = words::common_term_count(total);
    let enough = match terms.len() > 1 && total >= common {
        true => common,
        false => words::FREQUENT_TERM_RANKED + 1,
    };
    let mut matches = tx
        .prepare_cached(
            "SELECT count(*) FROM (SELECT rowid FROM observations_fts
                                   WHERE observations_fts MATCH ?1 LIMIT ?2)",
        )
        .map_err(db)?;
    let mut found = Vec::with_capacity(terms.len());
    for term in &terms {
        found.push(
            matches
                .query_row(params![term, enough], |r| r.get::<_, i64>(0))
                .map_err(db)?,
        );
    }
    // Common words go unless every word is common; then frequent ones unless every word left
    // is frequent.
    keep_if_any(&mut terms, &mut found, |n| {
        !words::is_common_term(total as f64, n as f64)
    });
    keep_if_any(&mut terms, &mut found, |n| {
        !words::is_frequent_term(n as f64)
    });
    let capped = found.iter().all(|&n| words::is_frequent_term(n as f64));
    Ok(Some(TextTerms {
        query: terms.join(" OR "),
        capped,
    }))
}

/// Keeps the terms whose match count passes `keep`, when any does (`found[i]` is `terms[i]`'s).
fn keep_if_any(terms: &mut Vec<String>, found: &mut Vec<i64>, keep: impl Fn(i64) -> bool) {
    if found.iter().any(|&n| keep(n)) {
        let kept: Vec<(String, i64)> = (terms.drain(..).zip(found.drain(..)))
            .filter(|(_, n)| keep(*n))
            .collect();
        (*terms, *found) = kept.into_iter().unzip();
    }
}

/// The `limit` best full-text matches of `terms` among the facts the search sees as
/// `(observation id, score)`: bm25, negated so that higher is better; of a
/// [`TextTerms::capped`] query, the best of its first [`words::FREQUENT_TERM_RANKED`] matches
/// in the workspace. In a search of a past time, the texts matched are today's.
fn text_matches(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    terms: &TextTerms,
    limit: usize,
    request: &CandidateQuery,
    seen: Seen,
) -> Result<Vec<(i64, f64)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let ranked = match terms.capped {
        true => words::FREQUENT_TERM_RANKED,
        false => -1,
    };
    let types = types_json(request);
    let mut parameters: Vec<&dyn rusqlite::ToSql> = vec![&terms.query, &limit, &ranked];
    // Nodes are joined only for a filter: every match would pass its `NULL` tests. With one
    // workspace in the file and nothing to sift every match is one to rank: FTS5 ranks its
    // matches alone, without joining each one to its observation row (a sixth of a common
    // word's search).
    let (join, filter) = if request.is_narrowed() {
        parameters.extend([
            &workspace.0 as &dyn rusqlite::ToSql,
            &request.within,
            &types,
        ]);
        (
            "JOIN observations o ON o.id = observations_fts.rowid JOIN nodes n ON n.id = o.node_id",
            format!(
                "AND o.workspace_id = ?4 AND (?5 IS NULL OR n.name = ?5)
                 AND (?6 IS NULL OR n.entity_type IN (SELECT value FROM json_each(?6)))
                 AND {}",
                seen.condition(7)
            ),
        )
    } else if !seen.sift && only_workspace(tx)? {
        ("", String::new())
    } else {
        parameters.push(&workspace.0);
        (
            "JOIN observations o ON o.id = observations_fts.rowid",
            format!("AND o.workspace_id = ?4 AND {}", seen.condition(5)),
        )
    };
    if let (Some(at), false) = (&seen.as_of, join.is_empty()) {
        parameters.push(at);
    }
    // A negative LIMIT is none. The scan stops at the capped query's first matches.
    let sql = format!(
        "SELECT id, score FROM (
             SELECT observations_fts.rowid AS id, -bm25(observations_fts) AS score
             FROM observations_fts {join}
             WHERE observations_fts MATCH ?1 {filter}
             LIMIT ?3)
         ORDER BY score DESC, id
         LIMIT ?2"
    );
    query(tx, &sql, params_from_iter(parameters), id_score)
}

/// Whether the file holds a single workspace (the one being searched).
fn only_workspace(tx: &Transaction<'_>) -> Result<bool> {
    tx.prepare_cached("SELECT count(*) = 1 FROM workspaces")
        .and_then(|mut statement| statement.query_row([], |row| row.get(0)))
        .map_err(db)
}

/// The full-text scores of `terms` for the observations `ids` that match them.
fn text_scores(tx: &Transaction<'_>, terms: &str, ids: &[i64]) -> Result<Vec<(i64, f64)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    query(
        tx,
        "SELECT rowid, -bm25(observations_fts)
         FROM observations_fts
         WHERE observations_fts MATCH ?1 AND rowid IN (SELECT value FROM json_each(?2))",
        params![terms, id_list(ids)],
        id_score,
    )
}

/// The newest [`NAMED_FACTS`] facts the search sees of each of the [`NAMED_NODES`] nodes whose
/// names `text` writes ([`name_probe`]), within the search's scope.
fn named_facts(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    text: &str,
    request: &CandidateQuery,
    seen: Seen,
) -> Result<Vec<i64>> {
    let (words, required) = name_probe(text);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let sql = format!(
        "WITH held AS (
             SELECT w.node_id, count(*) AS held
             FROM node_name_words w
             WHERE w.workspace_id = ?1 AND w.word IN (SELECT value FROM json_each(?2))
             GROUP BY w.node_id),
         named AS (
             SELECT h.node_id FROM held h
             WHERE h.held = ?3
                OR h.held = (SELECT count(*) FROM node_name_words x WHERE x.node_id = h.node_id)
             ORDER BY h.node_id
             LIMIT ?4),
         facts AS (
             SELECT o.id, row_number() OVER (PARTITION BY o.node_id ORDER BY o.ordinal DESC) AS nth
             FROM named
             JOIN nodes n ON n.id = named.node_id
             JOIN observations o ON o.node_id = n.id
             WHERE (?5 IS NULL OR n.name = ?5)
               AND (?6 IS NULL OR n.entity_type IN (SELECT value FROM json_each(?6)))
               AND {})
         SELECT id FROM facts WHERE nth <= ?7",
        seen.condition(8)
    );
    let (words, types) = (tags_json(&words), types_json(request));
    let (required, nodes, facts) = (required as i64, NAMED_NODES as i64, NAMED_FACTS as i64);
    let mut parameters: Vec<&dyn rusqlite::ToSql> = vec![
        &workspace.0,
        &words,
        &required,
        &nodes,
        &request.within,
        &types,
        &facts,
    ];
    if let Some(at) = &seen.as_of {
        parameters.push(at);
    }
    query(tx, &sql, params_from_iter(parameters), |row| row.get(0))
}

#[async_trait]
impl SearchStore for SqliteStore {
    #[instrument(skip_all)]
    async fn node_use(
        &self,
        workspace: WorkspaceId,
        names: &[String],
        first: &str,
    ) -> Result<Vec<NodeUse>> {
        let (names, first) = (names.to_vec(), first.to_owned());
        self.pool
            .read(move |tx| crate::access::node_use(tx, workspace, &names, &first))
            .await
    }

    #[instrument(skip_all)]
    async fn search(&self, request: &CandidateQuery) -> Result<Gathered> {
        let workspace = request.workspace;
        // One search's candidates: the nearest per vector and the best text matches, then each
        // candidate's vectors and missing text score.
        let (request, lists) = (request.clone(), self.lists.clone());
        let found = self
            .pool
            .read(move |tx| {
                let perspectives = match request.perspectives {
                    true => crate::vectors::perspectives(tx, workspace)?,
                    false => Vec::new(),
                };
                let terms = match request.text.as_deref() {
                    Some(text) => text_terms(tx, text)?,
                    None => None,
                };
                let mut set = CandidateSet::new(&request);
                let mut complete_ranking = false;
                let model = &request.model;
                // The facts the search does not see (not current, or not holding at `as_of`)
                // are left out of every candidate list.
                let seen = Seen::of(tx, workspace, &request)?;
                for (index, v) in request.vectors.iter().enumerate() {
                    let (perspective, vector) = (v.perspective, &v.vector);
                    let found =
                        nearest(tx, workspace, &request, perspective, vector, &lists, seen)?;
                    set.add_nearest(index, found);
                }
                if let Some(terms) = &terms {
                    // The deeper ranking only lends scores to what the embeddings found; a
                    // search without vectors needs the best `text_depth` alone.
                    let limit = match request.vectors.is_empty() {
                        true => request.text_depth,
                        false => TEXT_RANKING_LIMIT.max(request.text_depth),
                    };
                    let ranking = text_matches(tx, workspace, terms, limit, &request, seen)?;
                    // A capped query's other matches go without a text score: scoring chosen
                    // rows costs FTS5 a pass over each frequent word's matches per row.
                    complete_ranking = ranking.len() < limit || terms.capped;
                    set.add_text_ranking(ranking, request.text_depth);
                }
                if let Some(text) = request.text.as_deref() {
                    set.add_named(named_facts(tx, workspace, text, &request, seen)?);
                }
                // Every candidate's vector: hybrid ranking compares candidates with one
                // another, and the similarity of those the embeddings did not find comes from
                // it.
                let ids = set.ids();
                for (index, v) in request.vectors.iter().enumerate() {
                    let vectors = candidate_vectors(tx, &ids, model, v)?;
                    set.set_vectors(index, vectors);
                }
                if let Some(terms) = terms.as_ref().filter(|_| !complete_ranking) {
                    let missing = set.without_text_score();
                    set.set_text_scores(text_scores(tx, &terms.query, &missing)?);
                }
                let rows = observation_rows(tx, &set.ids(), seen)?;
                Ok(Gathered {
                    candidates: set.finish(rows),
                    perspectives,
                    aliased: crate::merge::aliased_nodes(tx, workspace, &request.alias_runs)?,
                })
            })
            .await?;
        self.lists.build_when_due_from_search(&self.pool);
        Ok(found)
    }

    #[instrument(skip_all)]
    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>> {
        self.pool
            .read(move |tx| {
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
            })
            .await
    }
}
