//! Merging duplicates and aliases: `merge_entities`, `set_aliases`, and the alias lookup
//! the domain makes where a name was not found.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;

/// A node row locked for a merge.
struct Locked {
    id: i64,
    name: String,
    summary: Option<String>,
    tags: Vec<String>,
}

/// The named nodes, locked in id order (as every writer locks them), by name.
async fn lock_nodes(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    names: &[&str],
) -> Result<HashMap<String, Locked>> {
    let rows = client
        .query(
            "SELECT id, name, summary, tags FROM nodes
             WHERE workspace_id = $1 AND name = ANY($2) ORDER BY id FOR UPDATE",
            &[&workspace.0, &names],
        )
        .await
        .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| {
            let locked = Locked {
                id: row.get("id"),
                name: row.get("name"),
                summary: row.get("summary"),
                tags: row.get("tags"),
            };
            (locked.name.clone(), locked)
        })
        .collect())
}

/// Moves the sources' facts to the target as [`plan_merge_facts`] plans it, writing in three
/// statements. Versions, periods and vectors move with their rows.
async fn move_observations(
    client: &impl GenericClient,
    target: i64,
    sources: &[&Locked],
) -> Result<Vec<MovedObservation>> {
    let held = client
        .query(
            "SELECT content FROM observations
             WHERE node_id = $1 AND (valid_to IS NULL OR valid_to > now())",
            &[&target],
        )
        .await
        .map_err(db)?;
    let next: i64 = client
        .query_one("SELECT next_ordinal FROM nodes WHERE id = $1", &[&target])
        .await
        .map_err(db)?
        .get(0);
    let mut facts = Vec::with_capacity(sources.len());
    for source in sources {
        let rows = client
            .query(
                "SELECT id, ordinal, content, (valid_to IS NULL OR valid_to > now()) AS current
                 FROM observations WHERE node_id = $1 ORDER BY ordinal",
                &[&source.id],
            )
            .await
            .map_err(db)?;
        let rows: Vec<SourceFact<i64>> = (rows.iter())
            .map(|row| SourceFact {
                id: row.get("id"),
                ordinal: Ordinal(row.get("ordinal")),
                content: row.get("content"),
                current: row.get("current"),
            })
            .collect();
        facts.push((source.name.as_str(), rows));
    }
    let plan = plan_merge_facts(held.iter().map(|row| row.get(0)), next, &facts);
    let (ids, ordinals): (Vec<i64>, Vec<i64>) = plan
        .kept
        .iter()
        .map(|(id, ordinal)| (*id, ordinal.0))
        .unzip();
    client
        .execute(
            "DELETE FROM observations WHERE id = ANY($1)",
            &[&plan.dropped],
        )
        .await
        .map_err(db)?;
    client
        .execute(
            "UPDATE observations o SET node_id = $1, ordinal = m.ordinal
             FROM unnest($2::bigint[], $3::bigint[]) AS m (id, ordinal) WHERE o.id = m.id",
            &[&target, &ids, &ordinals],
        )
        .await
        .map_err(db)?;
    client
        .execute(
            "UPDATE nodes SET next_ordinal = $2 WHERE id = $1",
            &[&target, &plan.next_ordinal],
        )
        .await
        .map_err(db)?;
    Ok(plan.moved)
}

/// Re-points the sources' relations to the target: those it already has, and those between a
/// source and the target (they would relate it to itself), are dropped. Ended relations move
/// too. Returns the re-pointed relations as they are now, and the dropped ones as they were.
async fn move_relations(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    target: i64,
    sources: &[i64],
) -> Result<(Vec<Relation>, Vec<Relation>)> {
    let gone = client
        .query(
            "DELETE FROM relations r
             WHERE r.workspace_id = $1 AND (r.from_node_id = ANY($2) OR r.to_node_id = ANY($2))
             RETURNING r.from_node_id, r.to_node_id, r.relation_type, r.created_at, r.valid_from,
                       (SELECT name FROM nodes WHERE id = r.from_node_id) AS from_name,
                       (SELECT name FROM nodes WHERE id = r.to_node_id) AS to_name",
            &[&workspace.0, &sources],
        )
        .await
        .map_err(db)?;
    let held = client
        .query(
            "SELECT from_node_id, to_node_id, relation_type FROM relations
             WHERE from_node_id = $1 OR to_node_id = $1",
            &[&target],
        )
        .await
        .map_err(db)?;
    let mut taken: HashSet<(i64, i64, String)> = (held.iter())
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let repoint = |id: i64| if sources.contains(&id) { target } else { id };
    let mut dropped = Vec::new();
    let (mut from, mut to, mut types, mut created, mut valid_from) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for row in &gone {
        let old = Relation::new(
            row.get::<_, String>("from_name"),
            row.get::<_, String>("to_name"),
            row.get::<_, String>("relation_type"),
        );
        let (f, t) = (repoint(row.get(0)), repoint(row.get(1)));
        if (f == target && t == target) || !taken.insert((f, t, old.relation_type.clone())) {
            dropped.push(old);
            continue;
        }
        from.push(f);
        to.push(t);
        types.push(old.relation_type.clone());
        created.push(row.get::<_, Timestamp>("created_at"));
        valid_from.push(row.get::<_, Timestamp>("valid_from"));
    }
    let inserted = client
        .query(
            "INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type,
                                    created_at, valid_from)
             SELECT $1, f, t, ty, c, v
             FROM unnest($2::bigint[], $3::bigint[], $4::text[], $5::timestamptz[],
                         $6::timestamptz[]) AS m (f, t, ty, c, v)
             RETURNING (SELECT name FROM nodes WHERE id = from_node_id) AS from_name,
                       (SELECT name FROM nodes WHERE id = to_node_id) AS to_name,
                       relation_type",
            &[&workspace.0, &from, &to, &types, &created, &valid_from],
        )
        .await
        .map_err(db)?;
    let mut relations: Vec<Relation> = inserted.iter().map(crate::nodes::relation).collect();
    relations.sort();
    client
        .execute(
            "UPDATE ended_relations
             SET from_node_id = CASE WHEN from_node_id = ANY($2) THEN $1 ELSE from_node_id END,
                 to_node_id = CASE WHEN to_node_id = ANY($2) THEN $1 ELSE to_node_id END
             WHERE from_node_id = ANY($2) OR to_node_id = ANY($2)",
            &[&target, &sources],
        )
        .await
        .map_err(db)?;
    Ok((relations, dropped))
}

#[async_trait]
impl AliasStore for PgStore {
    #[instrument(skip_all, fields(sources = request.sources.len()))]
    async fn merge_entities(
        &self,
        workspace: WorkspaceId,
        request: &Checked<MergeEntities>,
    ) -> Result<MergedEntities> {
        let merged = write!(self, |tx| async {
            let mut names: Vec<&str> = request.sources.iter().map(String::as_str).collect();
            // The sources' names become aliases.
            crate::name_locks::lock_names(&tx, workspace, &names).await?;
            names.push(&request.target);
            let locked = lock_nodes(&tx, workspace, &names).await?;
            let target = (locked.get(&request.target))
                .ok_or_else(|| Error::node_not_found(&request.target))?;
            let sources: Vec<&Locked> = (request.sources.iter())
                .map(|name| locked.get(name).ok_or_else(|| Error::node_not_found(name)))
                .collect::<Result<_>>()?;
            let source_ids: Vec<i64> = sources.iter().map(|s| s.id).collect();
            let added = sources.iter().flat_map(|s| &s.tags);
            let tags = limits::united_tags("sources", &target.tags, added)?;
            let observations = move_observations(&tx, target.id, &sources).await?;
            let (relations, dropped_relations) =
                move_relations(&tx, workspace, target.id, &source_ids).await?;
            // The sources' names and aliases answer for the target from now on.
            tx.execute(
                "UPDATE node_aliases SET node_id = $1 WHERE node_id = ANY($2)",
                &[&target.id, &source_ids],
            )
            .await
            .map_err(db)?;
            tx.execute(
                "INSERT INTO node_aliases (workspace_id, alias, node_id)
                 SELECT $1, unnest($2::text[]), $3",
                &[&workspace.0, &request.sources, &target.id],
            )
            .await
            .map_err(db)?;
            tx.execute(
                "INSERT INTO events (workspace_id, node_id, node_name, subject, operation, detail)
                 SELECT $1, $2, $3, 'node', 'update', 'merged:' || s
                 FROM unnest($4::text[]) AS s",
                &[&workspace.0, &target.id, &target.name, &request.sources],
            )
            .await
            .map_err(db)?;
            tx.execute(
                "UPDATE nodes SET tags = $2 WHERE id = $1",
                &[&target.id, &tags],
            )
            .await
            .map_err(db)?;
            // The sources' events outlive them, no longer tied to a node: they say who wrote
            // the facts that moved (`get_history` reads an entry's author from its
            // transaction's events).
            tx.execute(
                "UPDATE events SET node_id = NULL WHERE node_id = ANY($1)",
                &[&source_ids],
            )
            .await
            .map_err(db)?;
            // Their reflections move to the target with their facts, and their reads add to its.
            for sql in [
                "INSERT INTO node_access (node_id, workspace_id, reads, last_read_at)
                 SELECT $1, min(workspace_id), sum(reads)::bigint, max(last_read_at)
                 FROM node_access WHERE node_id = ANY($2) HAVING count(*) > 0
                 ON CONFLICT (node_id) DO UPDATE
                 SET reads = node_access.reads + excluded.reads,
                     last_read_at = greatest(node_access.last_read_at, excluded.last_read_at)",
                "UPDATE reflections SET node_id = $1 WHERE node_id = ANY($2)",
                "UPDATE reflections
                 SET from_node_id = CASE WHEN from_node_id = ANY($2) THEN $1 ELSE from_node_id END,
                     to_node_id = CASE WHEN to_node_id = ANY($2) THEN $1 ELSE to_node_id END
                 WHERE from_node_id = ANY($2) OR to_node_id = ANY($2)",
            ] {
                tx.execute(sql, &[&target.id, &source_ids])
                    .await
                    .map_err(db)?;
            }
            tx.execute("DELETE FROM nodes WHERE id = ANY($1)", &[&source_ids])
                .await
                .map_err(db)?;
            let aliases = aliases_of(&tx, target.id).await?;
            let source_summaries: BTreeMap<String, String> = (sources.iter())
                .filter_map(|s| Some((s.name.clone(), s.summary.clone()?)))
                .collect();
            Ok(MergedEntities {
                target: target.name.clone(),
                observations,
                relations,
                dropped_relations,
                tags,
                source_summaries,
                aliases,
            })
        })?;
        self.written.wrote(request.sources.len(), &self.direct);
        Ok(merged)
    }

    #[instrument(skip_all)]
    async fn set_aliases(
        &self,
        workspace: WorkspaceId,
        request: &Checked<SetAliases>,
    ) -> Result<AliasesUpdate> {
        write!(self, |tx| async {
            let aliases: Vec<&str> = request.aliases.iter().map(String::as_str).collect();
            crate::name_locks::lock_names(&tx, workspace, &aliases).await?;
            let locked = lock_nodes(&tx, workspace, &[request.name.as_str()]).await?;
            let node =
                (locked.get(&request.name)).ok_or_else(|| Error::node_not_found(&request.name))?;
            let holders = alias_holders(&tx, workspace, &aliases).await?;
            refuse_held_aliases(&request.name, &request.aliases, &holders)?;
            tx.execute("DELETE FROM node_aliases WHERE node_id = $1", &[&node.id])
                .await
                .map_err(db)?;
            tx.execute(
                "INSERT INTO node_aliases (workspace_id, alias, node_id)
                 SELECT $1, unnest($2::text[]), $3",
                &[&workspace.0, &request.aliases, &node.id],
            )
            .await
            .map_err(db)?;
            Ok(AliasesUpdate {
                name: node.name.clone(),
                aliases: aliases_of(&tx, node.id).await?,
            })
        })
    }

    #[instrument(skip_all, fields(count = request.names.len()))]
    async fn resolve_aliases(
        &self,
        request: ResolveAliases<'_>,
    ) -> Result<HashMap<String, String>> {
        let ResolveAliases { workspace, names } = request;
        // Not `read!`: one statement, prepared once per connection, one round trip.
        single!(self, |client| aliases_in(&client, workspace, names))
    }
}

/// The nodes the aliases among `names` stand for, by alias: one prepared statement.
async fn aliases_in(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    names: &[String],
) -> Result<HashMap<String, String>> {
    let statement = client
        .prepare_cached(
            "SELECT a.alias, n.name FROM node_aliases a JOIN nodes n ON n.id = a.node_id
             WHERE a.workspace_id = $1 AND a.alias = ANY($2)",
        )
        .await
        .map_err(db)?;
    let rows = (client.query(&statement, &[&workspace.0, &names]).await).map_err(db)?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// The names of the nodes that some of `runs` are aliases of (a search's
/// [`engram_domain::CandidateQuery::alias_runs`]); nothing is read for no runs.
pub(crate) async fn aliased_nodes(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    runs: &[String],
) -> Result<Vec<String>> {
    match runs.is_empty() {
        true => Ok(Vec::new()),
        false => Ok(aliases_in(client, workspace, runs)
            .await?
            .into_values()
            .collect()),
    }
}

/// A node's aliases, sorted.
pub(crate) async fn aliases_of(client: &impl GenericClient, node: i64) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT alias FROM node_aliases WHERE node_id = $1 ORDER BY alias",
            &[&node],
        )
        .await
        .map_err(db)?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// The nodes that hold `aliases` in `workspace`, by alias: the node of that name, or the node
/// the alias names; aliases nothing holds are absent.
pub(crate) async fn alias_holders(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    aliases: &[&str],
) -> Result<HashMap<String, String>> {
    let rows = client
        .query(
            "SELECT a.alias, n.name FROM unnest($2::text[]) AS a (alias)
             JOIN nodes n ON n.workspace_id = $1 AND n.name = a.alias
             UNION ALL
             SELECT a.alias, n.name FROM node_aliases a JOIN nodes n ON n.id = a.node_id
             WHERE a.workspace_id = $1 AND a.alias = ANY($2)",
            &[&workspace.0, &aliases],
        )
        .await
        .map_err(db)?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}
