//! Memory over time: facts and relations ended, and expired facts deleted for good ([`engram_domain::ValidityStore`]).

use std::collections::{BTreeSet, HashSet};

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;
use crate::relations::columns;

#[async_trait]
impl ValidityStore for PgStore {
    #[instrument(skip_all, fields(count = request.endings.len()))]
    async fn end_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndObservations>,
    ) -> Result<Vec<EndedObservations>> {
        let (names, ordinals): (Vec<&str>, Vec<i64>) = (request.endings.iter())
            .flat_map(|e| e.ordinals.iter().map(|o| (e.entity_name.as_str(), o.0)))
            .unzip();
        write!(self, |tx| async {
            // The current facts asked for, locked; an end before a fact began refuses the
            // whole call before anything is written.
            let rows = tx
                .query(
                    "SELECT o.id, n.name, o.ordinal, o.valid_from,
                            coalesce($4::timestamptz, now()) AS ended_at
                     FROM unnest($2::text[], $3::bigint[]) AS e (name, ordinal)
                     JOIN nodes n ON n.workspace_id = $1 AND n.name = e.name
                     JOIN observations o ON o.node_id = n.id AND o.ordinal = e.ordinal
                     WHERE o.valid_to IS NULL OR o.valid_to > now()
                     ORDER BY o.id
                     FOR UPDATE OF o",
                    &[&workspace.0, &names, &ordinals, &request.ended_at],
                )
                .await
                .map_err(db)?;
            for row in &rows {
                let (valid_from, ended_at): (Timestamp, Timestamp) =
                    (row.get("valid_from"), row.get("ended_at"));
                if ended_at < valid_from {
                    let fact = format!("the fact {}#{}", row.get::<_, &str>("name"), {
                        row.get::<_, i64>("ordinal")
                    });
                    return Err(ended_before_it_began(&fact, ended_at, valid_from));
                }
            }
            let ids: Vec<i64> = rows.iter().map(|row| row.get("id")).collect();
            tx.execute(
                "UPDATE observations SET valid_to = coalesce($2::timestamptz, now()),
                                         expires_at = NULL
                 WHERE id = ANY($1)",
                &[&ids, &request.ended_at],
            )
            .await
            .map_err(db)?;
            // A node left without current facts keeps no aggregate vector (the indexer
            // refreshes the others' when it re-embeds their changed node).
            tx.execute(
                "DELETE FROM node_embeddings ne USING nodes n
                 WHERE n.workspace_id = $1 AND n.name = ANY($2) AND ne.node_id = n.id
                   AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.node_id = n.id
                                   AND (o.valid_to IS NULL OR o.valid_to > now()))",
                &[&workspace.0, &names],
            )
            .await
            .map_err(db)?;
            let ended: BTreeSet<(String, i64)> = (rows.iter())
                .map(|row| (row.get("name"), row.get("ordinal")))
                .collect();
            Ok(ended_rows(&request.endings, &ended))
        })
    }

    #[instrument(skip_all, fields(count = request.relations.len()))]
    async fn end_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndRelations>,
    ) -> Result<EndedRelations> {
        let (distinct, [from, to, types]) = columns(&request.relations);
        let ended = write!(self, |tx| async {
            // Moved, not updated: `relations` holds the current ones, so every default read
            // stays as it was, and the same relation created again starts a new period.
            let rows = tx
                .query(
                    "WITH gone AS (
                         DELETE FROM relations r
                         USING nodes f, nodes t,
                               unnest($2::text[], $3::text[], $4::text[])
                               AS d (from_name, to_name, relation_type)
                         WHERE f.workspace_id = $1 AND f.name = d.from_name
                           AND t.workspace_id = $1 AND t.name = d.to_name
                           AND r.from_node_id = f.id AND r.to_node_id = t.id
                           AND r.relation_type = d.relation_type
                         RETURNING r.workspace_id, r.from_node_id, r.to_node_id, r.relation_type,
                                   r.created_at, r.valid_from, f.name AS from_name,
                                   t.name AS to_name
                     ), kept AS (
                         INSERT INTO ended_relations (workspace_id, from_node_id, to_node_id,
                                                      relation_type, created_at, valid_from,
                                                      valid_to)
                         SELECT workspace_id, from_node_id, to_node_id, relation_type, created_at,
                                valid_from,
                                greatest(coalesce($5::timestamptz, now()), valid_from)
                         FROM gone
                     )
                     SELECT from_name, to_name, relation_type, valid_from,
                            coalesce($5::timestamptz, now()) AS ended_at
                     FROM gone",
                    &[&workspace.0, &from, &to, &types, &request.ended_at],
                )
                .await
                .map_err(db)?;
            let mut ended = HashSet::new();
            for row in &rows {
                let spec = RelationSpec::new(
                    row.get::<_, String>("from_name"),
                    row.get::<_, String>("to_name"),
                    row.get::<_, String>("relation_type"),
                );
                let (valid_from, ended_at): (Timestamp, Timestamp) =
                    (row.get("valid_from"), row.get("ended_at"));
                if ended_at < valid_from {
                    // The transaction rolls back: nothing was moved.
                    let what = format!("the relation {spec}");
                    return Err(ended_before_it_began(&what, ended_at, valid_from));
                }
                ended.insert((spec.from_entity, spec.to_entity, spec.relation_type));
            }
            let mut result = EndedRelations::default();
            for spec in &distinct {
                let key = (
                    spec.from_entity.clone(),
                    spec.to_entity.clone(),
                    spec.relation_type.clone(),
                );
                let echoed = RelationSpec {
                    valid_from: None,
                    ..(*spec).clone()
                };
                match ended.contains(&key) {
                    true => result.ended.push(echoed),
                    false => result.not_found.push(echoed),
                }
            }
            Ok(result)
        })?;
        self.written.wrote(request.relations.len(), &self.direct);
        Ok(ended)
    }

    #[instrument(skip_all)]
    async fn purge_expired(&self, limit: u32) -> Result<u64> {
        write!(self, |tx| async {
            let rows = tx
                .query(
                    "DELETE FROM observations WHERE id IN (
                         SELECT id FROM observations
                         WHERE expires_at IS NOT NULL AND expires_at <= now()
                         ORDER BY expires_at LIMIT $1
                         FOR UPDATE SKIP LOCKED)
                     RETURNING node_id",
                    &[&i64::from(limit)],
                )
                .await
                .map_err(db)?;
            let nodes: Vec<i64> = rows.iter().map(|row| row.get(0)).collect();
            tx.execute(
                "DELETE FROM node_embeddings ne
                 WHERE ne.node_id = ANY($1)
                   AND NOT EXISTS (SELECT 1 FROM observations o WHERE o.node_id = ne.node_id
                                   AND (o.valid_to IS NULL OR o.valid_to > now()))",
                &[&nodes],
            )
            .await
            .map_err(db)?;
            Ok(rows.len() as u64)
        })
    }
}

/// `end_observations`' rows, in request order: each asked ordinal ended (in `ended`, the
/// `(name, ordinal)`s the store ended) or not found.
fn ended_rows(
    endings: &[ObservationEndings],
    ended: &BTreeSet<(String, i64)>,
) -> Vec<EndedObservations> {
    (endings.iter())
        .map(|ending| {
            let asked: BTreeSet<i64> = ending.ordinals.iter().map(|o| o.0).collect();
            let (done, missing): (Vec<i64>, Vec<i64>) = (asked.into_iter())
                .partition(|o| ended.contains(&(ending.entity_name.clone(), *o)));
            EndedObservations {
                entity_name: ending.entity_name.clone(),
                ended_ordinals: done.into_iter().map(Ordinal).collect(),
                not_found_ordinals: missing.into_iter().map(Ordinal).collect(),
            }
        })
        .collect()
}
