//! The node-name words "did you mean" looks up ([`engram_domain::SuggestionStore`]).

use std::collections::HashMap;

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::params;
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;

#[async_trait]
impl SuggestionStore for SqliteStore {
    #[instrument(skip_all)]
    async fn similar_names(&self, request: SimilarNames<'_>) -> Result<Vec<Vec<String>>> {
        let SimilarNames {
            workspace,
            names,
            limit,
        } = request;
        let names = names.to_vec();
        self.pool
            .read(move |tx| {
                let mut starting = (tx.prepare_cached(
                    "SELECT node_id FROM node_name_words
                     WHERE workspace_id = ?1 AND word >= ?2 AND word < ?2 || char(1114111)
                     ORDER BY word LIMIT 64",
                ))
                .map_err(db)?;
                let mut equal = (tx.prepare_cached(
                    "SELECT node_id FROM node_name_words
                     WHERE workspace_id = ?1 AND word = ?2 LIMIT 64",
                ))
                .map_err(db)?;
                let mut named =
                    (tx.prepare_cached("SELECT name FROM nodes WHERE id = ?1")).map_err(db)?;
                let mut similar = Vec::with_capacity(names.len());
                for name in &names {
                    // Per probe, the first words in order of the index: a few range scans;
                    // the nodes hit most often are the candidates.
                    let probe = suggestions::probe(name);
                    let mut hits: HashMap<i64, usize> = HashMap::new();
                    for (statement, words) in
                        [(&mut starting, &probe.starts), (&mut equal, &probe.wholes)]
                    {
                        for word in words {
                            let ids = statement
                                .query_map(params![workspace.0, word], |row| row.get::<_, i64>(0))
                                .map_err(db)?;
                            for id in ids {
                                *hits.entry(id.map_err(db)?).or_default() += 1;
                            }
                        }
                    }
                    let mut ranked: Vec<(i64, usize)> = hits.into_iter().collect();
                    ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                    ranked.truncate(limit.saturating_mul(4));
                    let mut candidates = Vec::with_capacity(ranked.len());
                    for (id, count) in ranked {
                        let other: String =
                            named.query_row(params![id], |row| row.get(0)).map_err(db)?;
                        if &other != name {
                            candidates.push((count, other));
                        }
                    }
                    candidates.sort_by(|a, b| {
                        (b.0.cmp(&a.0))
                            .then(a.1.len().cmp(&b.1.len()))
                            .then_with(|| a.1.cmp(&b.1))
                    });
                    candidates.truncate(limit);
                    similar.push(candidates.into_iter().map(|(_, name)| name).collect());
                }
                Ok(similar)
            })
            .await
    }
}
