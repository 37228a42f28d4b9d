//! The node-name words "did you mean" looks up ([`engram_domain::SuggestionStore`]).

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

#[async_trait]
impl SuggestionStore for PgStore {
    #[instrument(skip_all)]
    async fn similar_names(&self, request: SimilarNames<'_>) -> Result<Vec<Vec<String>>> {
        let SimilarNames {
            workspace,
            names,
            limit,
        } = request;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        read!(self, |tx| async {
            let statement = tx
                .prepare_cached(
                    "WITH hits AS (
                         SELECT w.node_id FROM unnest($2::text[]) AS s (start)
                         CROSS JOIN LATERAL (
                             SELECT node_id FROM node_name_words
                             WHERE workspace_id = $1 AND word >= s.start COLLATE \"C\"
                               AND word < (s.start || chr(1114111)) COLLATE \"C\"
                             ORDER BY word LIMIT 64) w
                         UNION ALL
                         SELECT w.node_id FROM unnest($3::text[]) AS p (whole)
                         CROSS JOIN LATERAL (
                             SELECT node_id FROM node_name_words
                             WHERE workspace_id = $1 AND word = p.whole COLLATE \"C\"
                             LIMIT 64) w
                     )
                     SELECT n.name FROM (
                         SELECT node_id, count(*) AS hits FROM hits GROUP BY node_id
                     ) c JOIN nodes n ON n.id = c.node_id
                     WHERE n.name <> $4
                     ORDER BY c.hits DESC, length(n.name), n.name LIMIT $5",
                )
                .await
                .map_err(db)?;
            let mut similar = Vec::with_capacity(names.len());
            for name in names {
                // Per probe, the first words in order of the index: a few range scans.
                let probe = suggestions::probe(name);
                let rows = tx
                    .query(
                        &statement,
                        &[&workspace.0, &probe.starts, &probe.wholes, name, &limit],
                    )
                    .await
                    .map_err(db)?;
                similar.push(rows.iter().map(|row| row.get("name")).collect());
            }
            Ok(similar)
        })
    }
}
