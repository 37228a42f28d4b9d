//! Merging duplicates and aliases: `merge_entities`, `set_aliases`, and the alias lookup the
//! domain makes where a name was not found.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, Transaction, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::db;
use crate::sql::{id_list, query, strings, tags_json};

/// A node read for a merge.
struct Found {
    id: i64,
    name: String,
    summary: Option<String>,
    tags: Vec<String>,
}

/// The node named `name`, if any.
fn find(tx: &Transaction<'_>, workspace: WorkspaceId, name: &str) -> Result<Option<Found>> {
    tx.query_row(
        "SELECT id, name, summary, tags FROM nodes WHERE workspace_id = ?1 AND name = ?2",
        params![workspace.0, name],
        |row| {
            Ok(Found {
                id: row.get(0)?,
                name: row.get(1)?,
                summary: row.get(2)?,
                tags: strings(row, "tags")?,
            })
        },
    )
    .optional()
    .map_err(db)
}

/// Moves the sources' facts to the target as [`plan_merge_facts`] plans it. Versions,
/// periods and vectors move with their rows.
fn move_observations(
    tx: &Transaction<'_>,
    target: i64,
    sources: &[Found],
) -> Result<Vec<MovedObservation>> {
    let current = "(valid_to IS NULL OR valid_to > engram_now())";
    let held: Vec<String> = query(
        tx,
        &format!("SELECT content FROM observations WHERE node_id = ?1 AND {current}"),
        params![target],
        |row| row.get(0),
    )?;
    let next: i64 = tx
        .query_row(
            "SELECT next_ordinal FROM nodes WHERE id = ?1",
            params![target],
            |r| r.get(0),
        )
        .map_err(db)?;
    let mut facts = Vec::with_capacity(sources.len());
    for source in sources {
        let rows: Vec<SourceFact<i64>> = query(
            tx,
            &format!(
                "SELECT id, ordinal, content, {current} FROM observations
                 WHERE node_id = ?1 ORDER BY ordinal"
            ),
            params![source.id],
            |row| {
                Ok(SourceFact {
                    id: row.get(0)?,
                    ordinal: Ordinal(row.get(1)?),
                    content: row.get(2)?,
                    current: row.get(3)?,
                })
            },
        )?;
        facts.push((source.name.as_str(), rows));
    }
    let plan = plan_merge_facts(held, next, &facts);
    for id in &plan.dropped {
        tx.execute("DELETE FROM observations WHERE id = ?1", params![id])
            .map_err(db)?;
    }
    let mut moved = tx
        .prepare_cached("UPDATE observations SET node_id = ?1, ordinal = ?2 WHERE id = ?3")
        .map_err(db)?;
    for (id, ordinal) in &plan.kept {
        moved.execute(params![target, ordinal.0, id]).map_err(db)?;
    }
    tx.execute(
        "UPDATE nodes SET next_ordinal = ?2 WHERE id = ?1",
        params![target, plan.next_ordinal],
    )
    .map_err(db)?;
    Ok(plan.moved)
}

/// Re-points the sources' relations to the target: those it already has, and those between a
/// source and the target (they would relate it to itself), are dropped. Ended relations move
/// too. Returns the re-pointed relations as they are now, and the dropped ones as they were.
fn move_relations(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    target: &Found,
    sources: &[i64],
) -> Result<(Vec<Relation>, Vec<Relation>)> {
    let ids = id_list(sources);
    let gone: Vec<(i64, i64, String, i64, i64, String, String)> = query(
        tx,
        "DELETE FROM relations
         WHERE workspace_id = ?1
           AND (from_node_id IN (SELECT value FROM json_each(?2))
                OR to_node_id IN (SELECT value FROM json_each(?2)))
         RETURNING from_node_id, to_node_id, relation_type, created_at, valid_from,
                   (SELECT name FROM nodes WHERE id = from_node_id),
                   (SELECT name FROM nodes WHERE id = to_node_id)",
        params![workspace.0, ids],
        |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get(5)?,
                row.get(6)?,
            ))
        },
    )?;
    let mut taken: HashSet<(i64, i64, String)> = query(
        tx,
        "SELECT from_node_id, to_node_id, relation_type FROM relations
         WHERE from_node_id = ?1 OR to_node_id = ?1",
        params![target.id],
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )?
    .into_iter()
    .collect();
    let names: HashMap<i64, String> = query(
        tx,
        "SELECT id, name FROM nodes WHERE id IN (SELECT value FROM json_each(?1))",
        params![id_list(
            &(gone.iter()).flat_map(|g| [g.0, g.1]).collect::<Vec<_>>()
        )],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?
    .into_iter()
    .collect();
    let repoint = |id: i64| if sources.contains(&id) { target.id } else { id };
    let mut insert = tx
        .prepare_cached(
            "INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type,
                                    created_at, valid_from)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(db)?;
    let (mut kept, mut dropped) = (Vec::new(), Vec::new());
    for (from, to, relation_type, created_at, valid_from, from_name, to_name) in gone {
        let (f, t) = (repoint(from), repoint(to));
        let old = Relation::new(&from_name, &to_name, &relation_type);
        if (f == target.id && t == target.id) || !taken.insert((f, t, relation_type.clone())) {
            dropped.push(old);
            continue;
        }
        insert
            .execute(params![
                workspace.0,
                f,
                t,
                relation_type,
                created_at,
                valid_from
            ])
            .map_err(db)?;
        let name = |id: i64| match id == target.id {
            true => target.name.clone(),
            false => names.get(&id).cloned().unwrap_or_default(),
        };
        kept.push(Relation::new(name(f), name(t), relation_type));
    }
    kept.sort();
    tx.execute(
        "UPDATE ended_relations
         SET from_node_id = CASE WHEN from_node_id IN (SELECT value FROM json_each(?2))
                                 THEN ?1 ELSE from_node_id END,
             to_node_id = CASE WHEN to_node_id IN (SELECT value FROM json_each(?2))
                               THEN ?1 ELSE to_node_id END
         WHERE from_node_id IN (SELECT value FROM json_each(?2))
            OR to_node_id IN (SELECT value FROM json_each(?2))",
        params![target.id, ids],
    )
    .map_err(db)?;
    Ok((kept, dropped))
}

/// A node's aliases, sorted.
fn aliases_of(tx: &Transaction<'_>, node: i64) -> Result<Vec<String>> {
    query(
        tx,
        "SELECT alias FROM node_aliases WHERE node_id = ?1 ORDER BY alias",
        params![node],
        |row| row.get(0),
    )
}

/// `merge_entities` in the write transaction (see [`AliasStore::merge_entities`]).
fn merge(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    request: &MergeEntities,
) -> Result<MergedEntities> {
    let target = find(tx, workspace, &request.target)?
        .ok_or_else(|| Error::node_not_found(&request.target))?;
    let sources: Vec<Found> = (request.sources.iter())
        .map(|name| find(tx, workspace, name)?.ok_or_else(|| Error::node_not_found(name)))
        .collect::<Result<_>>()?;
    let source_ids: Vec<i64> = sources.iter().map(|s| s.id).collect();
    let added = sources.iter().flat_map(|s| &s.tags);
    let tags = limits::united_tags("sources", &target.tags, added)?;
    let observations = move_observations(tx, target.id, &sources)?;
    let (relations, dropped_relations) = move_relations(tx, workspace, &target, &source_ids)?;
    // The sources' names and aliases answer for the target from now on.
    tx.execute(
        "UPDATE node_aliases SET node_id = ?1 WHERE node_id IN (SELECT value FROM json_each(?2))",
        params![target.id, id_list(&source_ids)],
    )
    .map_err(db)?;
    for source in &sources {
        tx.execute(
            "INSERT INTO node_aliases (workspace_id, alias, node_id) VALUES (?1, ?2, ?3)",
            params![workspace.0, source.name, target.id],
        )
        .map_err(db)?;
        tx.execute(
            "INSERT INTO events (workspace_id, node_id, node_name, subject, operation, at, detail)
             VALUES (?1, ?2, ?3, 'node', 'update', engram_now(), 'merged:' || ?4)",
            params![workspace.0, target.id, target.name, source.name],
        )
        .map_err(db)?;
    }
    tx.execute(
        "UPDATE nodes SET tags = ?2 WHERE id = ?1 AND tags IS NOT ?2",
        params![target.id, tags_json(&tags)],
    )
    .map_err(db)?;
    // The sources' events outlive them, no longer tied to a node: they say who wrote the facts
    // that moved (`get_history` reads an entry's author from its transaction's events).
    tx.execute(
        "UPDATE events SET node_id = NULL WHERE node_id IN (SELECT value FROM json_each(?1))",
        params![id_list(&source_ids)],
    )
    .map_err(db)?;
    // Their reflections move to the target with their facts, and their reads add to its.
    for sql in [
        "INSERT INTO node_access (node_id, workspace_id, reads, last_read_at)
         SELECT ?1, min(workspace_id), sum(reads), max(last_read_at)
         FROM node_access WHERE node_id IN (SELECT value FROM json_each(?2)) HAVING count(*) > 0
         ON CONFLICT (node_id) DO UPDATE
         SET reads = reads + excluded.reads, last_read_at = max(last_read_at, excluded.last_read_at)",
        "UPDATE reflections SET node_id = ?1 WHERE node_id IN (SELECT value FROM json_each(?2))",
        "UPDATE reflections
         SET from_node_id = CASE WHEN from_node_id IN (SELECT value FROM json_each(?2))
                                 THEN ?1 ELSE from_node_id END,
             to_node_id = CASE WHEN to_node_id IN (SELECT value FROM json_each(?2))
                               THEN ?1 ELSE to_node_id END
         WHERE from_node_id IN (SELECT value FROM json_each(?2))
            OR to_node_id IN (SELECT value FROM json_each(?2))",
    ] {
        tx.execute(sql, params![target.id, id_list(&source_ids)])
            .map_err(db)?;
    }
    tx.execute(
        "DELETE FROM nodes WHERE id IN (SELECT value FROM json_each(?1))",
        params![id_list(&source_ids)],
    )
    .map_err(db)?;
    let source_summaries: BTreeMap<String, String> = (sources.iter())
        .filter_map(|s| Some((s.name.clone(), s.summary.clone()?)))
        .collect();
    Ok(MergedEntities {
        aliases: aliases_of(tx, target.id)?,
        target: target.name,
        observations,
        relations,
        dropped_relations,
        tags,
        source_summaries,
    })
}

/// `set_aliases` in the write transaction (see [`AliasStore::set_aliases`]).
fn set(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    request: &SetAliases,
) -> Result<AliasesUpdate> {
    let node =
        find(tx, workspace, &request.name)?.ok_or_else(|| Error::node_not_found(&request.name))?;
    let holders = alias_holders(tx, workspace, &request.aliases)?;
    refuse_held_aliases(&node.name, &request.aliases, &holders)?;
    tx.execute(
        "DELETE FROM node_aliases WHERE node_id = ?1",
        params![node.id],
    )
    .map_err(db)?;
    for alias in &request.aliases {
        tx.execute(
            "INSERT INTO node_aliases (workspace_id, alias, node_id) VALUES (?1, ?2, ?3)",
            params![workspace.0, alias, node.id],
        )
        .map_err(db)?;
    }
    Ok(AliasesUpdate {
        aliases: aliases_of(tx, node.id)?,
        name: node.name,
    })
}

/// The nodes that hold `aliases` in `workspace`, by alias: the node of that name, or the node
/// the alias names; aliases nothing holds are absent.
pub(crate) fn alias_holders<'a>(
    tx: &Transaction<'_>,
    workspace: WorkspaceId,
    aliases: impl IntoIterator<Item = &'a String>,
) -> Result<HashMap<String, String>> {
    let mut holder = tx
        .prepare_cached(
            "SELECT name FROM nodes WHERE workspace_id = ?1 AND name = ?2
             UNION ALL
             SELECT n.name FROM node_aliases a JOIN nodes n ON n.id = a.node_id
             WHERE a.workspace_id = ?1 AND a.alias = ?2",
        )
        .map_err(db)?;
    let mut holders = HashMap::new();
    for alias in aliases {
        let held: Option<String> = holder
            .query_row(params![workspace.0, alias], |row| row.get(0))
            .optional()
            .map_err(db)?;
        if let Some(name) = held {
            holders.insert(alias.clone(), name);
        }
    }
    Ok(holders)
}

#[async_trait]
impl AliasStore for SqliteStore {
    #[instrument(skip_all, fields(sources = request.sources.len()))]
    async fn merge_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<MergeEntities>,
    ) -> Result<MergedEntities> {
        let request = (**request).clone();
        self.pool
            .write(move |tx| merge(tx, workspace, &request))
            .await
    }

    #[instrument(skip_all)]
    async fn set_aliases(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetAliases>,
    ) -> Result<AliasesUpdate> {
        let request = (**request).clone();
        self.pool
            .write(move |tx| set(tx, workspace, &request))
            .await
    }

    #[instrument(skip_all, fields(count = request.names.len()))]
    async fn resolve_aliases(
        &self,
        request: ResolveAliases<'_>,
    ) -> Result<HashMap<String, String>> {
        let (workspace, names) = (request.workspace, request.names.to_vec());
        self.pool
            .read(move |tx| aliases_in(tx, workspace, &names))
            .await
    }
}

/// The nodes the aliases among `names` stand for, by alias.
fn aliases_in(
    tx: &Transaction,
    workspace: WorkspaceId,
    names: &[String],
) -> Result<HashMap<String, String>> {
    let names = serde_json::Value::from(names.to_vec()).to_string();
    let found = query(
        tx,
        "SELECT a.alias, n.name FROM node_aliases a JOIN nodes n ON n.id = a.node_id
         WHERE a.workspace_id = ?1
           AND a.alias IN (SELECT value FROM json_each(?2))",
        params![workspace.0, names],
        |row| Ok((row.get(0)?, row.get(1)?)),
    )?;
    Ok(found.into_iter().collect())
}

/// The names of the nodes that some of `runs` are aliases of (a search's
/// [`engram_domain::CandidateQuery::alias_runs`]); nothing is read for no runs.
pub(crate) fn aliased_nodes(
    tx: &Transaction,
    workspace: WorkspaceId,
    runs: &[String],
) -> Result<Vec<String>> {
    match runs.is_empty() {
        true => Ok(Vec::new()),
        false => Ok(aliases_in(tx, workspace, runs)?.into_values().collect()),
    }
}
