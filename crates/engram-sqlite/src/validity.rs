//! Memory over time (migration V10): the facts and relations a read at another time than now
//! sees, ending facts and relations, and purging expired facts.
//!
//! A fact is current while `valid_to IS NULL OR valid_to > engram_now()`: every default read
//! and search spells that predicate out in its own SQL (on the alias it reads observations
//! under), so a read of the present stays the statement it was plus one condition. Current
//! relations are the rows of `relations`; ended ones live in `ended_relations` with their
//! period, so only reads that ask for other times look there.

use std::collections::BTreeSet;

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, Row, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::nodes::node_ids;
use crate::sql::query;
use crate::{micros, timestamp};

/// The time parameter of a read that is not of the present: `None` for every time (a `NULL`
/// the SQL reads as "no bound"), else the time read, in microseconds; `None` for [`ReadTime::Now`]
/// itself, whose statements take no time parameter.
pub(crate) fn past(time: ReadTime) -> Option<Option<i64>> {
    match time {
        ReadTime::Now => None,
        ReadTime::Ever => Some(None),
        ReadTime::At(at) => Some(Some(micros(at))),
    }
}

/// A table expression that stands for `relations r` filtered by `filter` (a condition on
/// `r`) in a read of the past (`?{at}` the time, see [`past`]): the current relations that
/// held from their `valid_from` on and the ended ones within their period, or every one there
/// ever was for a `NULL` time; with the columns reads use, `valid_from` and `valid_to` (`NULL`
/// for a current relation). The filter is in both arms, where their endpoint indexes serve it
/// (SQLite pushes no such condition into a `UNION ALL`).
pub(crate) fn relations_seen(filter: &str, at: usize) -> String {
    format!(
        "(SELECT r.from_node_id, r.to_node_id, r.relation_type, r.valid_from, NULL AS valid_to
          FROM relations r
          WHERE ({filter}) AND (?{at} IS NULL OR r.valid_from <= ?{at})
          UNION ALL
          SELECT r.from_node_id, r.to_node_id, r.relation_type, r.valid_from, r.valid_to
          FROM ended_relations r
          WHERE ({filter}) AND (?{at} IS NULL OR (r.valid_from <= ?{at} AND r.valid_to > ?{at})))"
    )
}

/// A relation with its period from a row with `from_name`, `to_name`, `relation_type`,
/// `valid_from` and `valid_to` (a read of the past).
pub(crate) fn dated_relation(row: &Row<'_>) -> rusqlite::Result<Relation> {
    Ok(Relation {
        valid_from: Some(timestamp(row.get("valid_from")?)),
        valid_to: row.get::<_, Option<i64>>("valid_to")?.map(timestamp),
        ..crate::nodes::relation(row)?
    })
}

/// The node's facts in ordinal order as `time` sees them, each with its `valid_from`: the
/// current ones now (with `valid_to` when they expire); every one with its period for
/// [`ReadTime::Ever`]; for [`ReadTime::At`] those that held then, each text as it read then
/// (the version that `replace_observation` replaced first after that time, else the text
/// now).
pub(crate) fn facts(tx: &Transaction<'_>, node: i64, time: ReadTime) -> Result<Vec<Observation>> {
    let Some(at) = past(time) else {
        return query(
            tx,
            "SELECT ordinal, content, valid_to, valid_from FROM observations
             WHERE node_id = ?1 AND (valid_to IS NULL OR valid_to > engram_now())
             ORDER BY ordinal",
            [node],
            |row| {
                Ok(Observation {
                    valid_to: row.get::<_, Option<i64>>(2)?.map(timestamp),
                    valid_from: Some(timestamp(row.get(3)?)),
                    ..Observation::new(Ordinal(row.get(0)?), row.get::<_, String>(1)?)
                })
            },
        );
    };
    query(
        tx,
        "SELECT o.ordinal,
                coalesce((SELECT v.content FROM observation_versions v
                          WHERE v.observation_id = o.id AND v.replaced_at > ?2
                          ORDER BY v.replaced_at LIMIT 1),
                         o.content),
                o.valid_from, o.valid_to
         FROM observations o
         WHERE o.node_id = ?1
           AND (?2 IS NULL OR (o.valid_from <= ?2 AND (o.valid_to IS NULL OR o.valid_to > ?2)))
         ORDER BY o.ordinal",
        params![node, at],
        |row| {
            Ok(Observation {
                valid_from: Some(timestamp(row.get(2)?)),
                valid_to: row.get::<_, Option<i64>>(3)?.map(timestamp),
                ..Observation::new(Ordinal(row.get(0)?), row.get::<_, String>(1)?)
            })
        },
    )
}

/// Drops the aggregate vectors of node `node` once it holds no current fact (a node without
/// facts has none; the indexer refreshes the others' when it embeds their changed context).
pub(crate) fn forget_bare_aggregates(tx: &Transaction<'_>, node: i64) -> Result<()> {
    tx.prepare_cached(
        "DELETE FROM node_embeddings
         WHERE node_id = ?1
           AND NOT EXISTS (SELECT 1 FROM observations o
                           WHERE o.node_id = ?1
                             AND (o.valid_to IS NULL OR o.valid_to > engram_now()))",
    )
    .and_then(|mut forget| forget.execute([node]))
    .map_err(db)?;
    Ok(())
}

/// `end_observations` in one write transaction: each current fact asked for gets `valid_to`
/// (`ended_at`, else now) and loses its expiry, since an ended fact is kept. An `ended_at`
/// before a fact's `valid_from` is an error, and the caller's rollback undoes the others.
pub(crate) fn end_observations(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    request: &EndObservations,
) -> Result<Vec<EndedObservations>> {
    let ids = node_ids(
        tx,
        workspace,
        request.endings.iter().map(|e| e.entity_name.as_str()),
    )?;
    let mut end = tx
        .prepare_cached(
            "UPDATE observations SET valid_to = coalesce(?3, engram_now()), expires_at = NULL
             WHERE node_id = ?1 AND ordinal = ?2
               AND (valid_to IS NULL OR valid_to > engram_now())
             RETURNING valid_from, valid_to",
        )
        .map_err(db)?;
    let ended_at = request.ended_at.map(micros);
    let mut result = Vec::with_capacity(request.endings.len());
    for ending in &request.endings {
        let ordinals: BTreeSet<i64> = ending.ordinals.iter().map(|o| o.0).collect();
        let mut row = EndedObservations {
            entity_name: ending.entity_name.clone(),
            ended_ordinals: Vec::new(),
            not_found_ordinals: Vec::new(),
        };
        let Some(&node) = ids.get(&ending.entity_name) else {
            row.not_found_ordinals = ordinals.into_iter().map(Ordinal).collect();
            result.push(row);
            continue;
        };
        for ordinal in ordinals {
            let period: Option<(i64, i64)> = end
                .query_row(params![node, ordinal, ended_at], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(db)?;
            match period {
                Some((from, to)) if to < from => {
                    let what = format!("the fact {}#{ordinal}", ending.entity_name);
                    return Err(ended_before_it_began(&what, timestamp(to), timestamp(from)));
                }
                Some(_) => row.ended_ordinals.push(Ordinal(ordinal)),
                None => row.not_found_ordinals.push(Ordinal(ordinal)),
            }
        }
        forget_bare_aggregates(tx, node)?;
        result.push(row);
    }
    Ok(result)
}

/// `end_relations` in one write transaction: each current relation asked for moves from
/// `relations` to `ended_relations` with its `valid_from` and a `valid_to` of `ended_at`
/// (else now). An `ended_at` before a relation's `valid_from` is an error, and the caller's
/// rollback undoes the others.
pub(crate) fn end_relations(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    request: &EndRelations,
) -> Result<EndedRelations> {
    let mut take = tx
        .prepare_cached(&format!(
            "DELETE FROM relations WHERE {}
             RETURNING from_node_id, to_node_id, valid_from, coalesce(?5, engram_now()),
                       created_at",
            crate::sql::ONE_RELATION
        ))
        .map_err(db)?;
    let mut keep = tx
        .prepare_cached(
            "INSERT INTO ended_relations (workspace_id, from_node_id, to_node_id, relation_type,
                                          valid_from, valid_to, created_at, recorded_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, engram_now())",
        )
        .map_err(db)?;
    let ended_at = request.ended_at.map(micros);
    let mut result = EndedRelations::default();
    for spec in each_relation_once(&request.relations) {
        let (from, to, relation_type) = (&spec.from_entity, &spec.to_entity, &spec.relation_type);
        // Echoed as given, less the `valid_from` only `create_relations` reads.
        let echoed = RelationSpec::new(from, to, relation_type);
        let taken: Option<(i64, i64, i64, i64, i64)> = take
            .query_row(
                params![workspace.0, from, to, relation_type, ended_at],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
            )
            .optional()
            .map_err(db)?;
        let Some((from_id, to_id, valid_from, valid_to, created_at)) = taken else {
            result.not_found.push(echoed);
            continue;
        };
        if valid_to < valid_from {
            let what = format!("the relation {from} -[{relation_type}]-> {to}");
            return Err(ended_before_it_began(
                &what,
                timestamp(valid_to),
                timestamp(valid_from),
            ));
        }
        keep.execute(params![
            workspace.0,
            from_id,
            to_id,
            relation_type,
            valid_from,
            valid_to,
            created_at
        ])
        .map_err(db)?;
        result.ended.push(echoed);
    }
    Ok(result)
}

/// Deletes up to `limit` facts of any workspace whose `expires_at` has passed (their versions
/// and vectors go with them), and the aggregate vectors of the nodes left without a current
/// fact; how many facts.
pub(crate) fn purge_expired(tx: &Transaction<'_>, limit: u32) -> Result<u64> {
    let nodes: Vec<i64> = query(
        tx,
        // Oldest expiry first, through the partial index on `expires_at`.
        "DELETE FROM observations
         WHERE id IN (SELECT id FROM observations WHERE expires_at <= engram_now()
                      ORDER BY expires_at LIMIT ?1)
         RETURNING node_id",
        [limit],
        |row| row.get(0),
    )?;
    let purged = nodes.len() as u64;
    for node in nodes.into_iter().collect::<BTreeSet<i64>>() {
        forget_bare_aggregates(tx, node)?;
    }
    Ok(purged)
}

#[async_trait]
impl ValidityStore for SqliteStore {
    #[instrument(skip_all, fields(count = request.endings.len()))]
    async fn end_observations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndObservations>,
    ) -> Result<Vec<EndedObservations>> {
        let request = (**request).clone();
        self.pool
            .write(move |tx| end_observations(tx, workspace, &request))
            .await
    }

    #[instrument(skip_all, fields(count = request.relations.len()))]
    async fn end_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<EndRelations>,
    ) -> Result<EndedRelations> {
        let request = (**request).clone();
        self.pool
            .write(move |tx| end_relations(tx, workspace, &request))
            .await
    }

    #[instrument(skip_all)]
    async fn purge_expired(&self, limit: u32) -> Result<u64> {
        self.pool.write(move |tx| purge_expired(tx, limit)).await
    }
}
