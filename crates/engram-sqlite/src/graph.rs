//! Graph walks and graph-wide checks: neighbourhood, a node's history, shortest path,
//! unlinked references.

use std::collections::{BTreeMap, HashMap, HashSet};

use async_trait::async_trait;
use engram_domain::all_paths::Neighbour;
use engram_domain::path::{PathSearch, STEP_SQL};
use engram_domain::*;
use rusqlite::params;
use tracing::instrument;

use crate::nodes::{node_id, node_pair, relation, relations_among};
use crate::sql::{id_list, query, strings};
use crate::{SqliteStore, validity};

/// Whether `c` is part of a word, as PostgreSQL's `[[:alnum:]_]`.
fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The key a mention of `lower` (a lower-cased name) is looked up by at a position of a text:
/// its leading word, or its first character when it starts with no word.
fn key(lower: &str) -> Option<&str> {
    let first = lower.chars().next()?;
    let end = if is_word(first) {
        lower.find(|c: char| !is_word(c)).unwrap_or(lower.len())
    } else {
        first.len_utf8()
    };
    Some(&lower[..end])
}

/// The nodes within `depth` hops of any of `seeds` over the current relations, nearest first,
/// then by name (`neighborhood.sql`), with their ids.
pub(crate) fn graph_nodes(
    tx: &rusqlite::Transaction<'_>,
    seeds: &[i64],
    depth: u32,
) -> Result<(Vec<i64>, Vec<GraphNode>)> {
    let sql = include_str!("sql/neighborhood.sql");
    let rows = query(tx, sql, params![id_list(seeds), depth], graph_node)?;
    Ok(rows.into_iter().unzip())
}

/// A row of a neighbourhood's statement: the node with its id.
fn graph_node(row: &rusqlite::Row<'_>) -> rusqlite::Result<(i64, GraphNode)> {
    let node = GraphNode {
        name: row.get("name")?,
        entity_type: row.get("entity_type")?,
        summary: row.get("summary")?,
        tags: strings(row, "tags")?,
    };
    Ok((row.get("id")?, node))
}

#[async_trait]
impl GraphStore for SqliteStore {
    #[instrument(skip_all)]
    async fn get_neighborhood(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetNeighborhood>,
    ) -> Result<Neighborhood> {
        let (name, depth, time) = (request.name.clone(), request.depth, request.read_time());
        self.pool
            .read(move |tx| {
                let start = node_id(tx, workspace, &name)?;
                // Now, the walk follows the current relations; in a read of the past, those
                // that held then (or ever).
                let (ids, nodes) = match validity::past(time) {
                    None => graph_nodes(tx, &[start], depth)?,
                    Some(at) => query(
                        tx,
                        include_str!("sql/neighborhood_history.sql"),
                        params![start, depth, at],
                        graph_node,
                    )?
                    .into_iter()
                    .unzip(),
                };
                Ok(Neighborhood {
                    relations: relations_among(tx, &ids, Endpoints::Both, time)?,
                    nodes,
                })
            })
            .await
    }

    #[instrument(skip_all)]
    async fn get_path(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetPath>,
    ) -> Result<GraphPath> {
        // A shortest path: [`engram_domain::path`]'s search from both ends, one statement per
        // level it asks for (`path_level.sql`), then its walk back from the target over each
        // node's neighbours by name and relation id (`engram_domain::path::STEP_SQL`), so the answer is
        // deterministic (and engram-pg's).
        let (from, to) = (request.from_entity.clone(), request.to_entity.clone());
        self.pool
            .read(move |tx| {
                let (source, target) = node_pair(tx, workspace, &from, &to)?;
                let mut search = PathSearch::new(source, target);
                while let Some(frontier) = search.frontier() {
                    let links = query(
                        tx,
                        include_str!("sql/path_level.sql"),
                        [id_list(frontier)],
                        |row| Ok((row.get(0)?, row.get(1)?)),
                    )?;
                    search.expand(links);
                }
                let Some(mut walk) = search.walk() else {
                    return Ok(GraphPath::default());
                };
                let mut path = vec![to];
                let mut relations = Vec::new();
                while let Some(current) = walk.at() {
                    let mut steps = query(tx, STEP_SQL, [current], |row| {
                        Ok((
                            row.get::<_, i64>("neighbour_id")?,
                            row.get::<_, String>("neighbour")?,
                            relation(row)?,
                        ))
                    })?;
                    let chosen = walk.step(steps.iter().map(|(id, _, _)| *id))?;
                    let (_, name, hop) = steps.swap_remove(chosen);
                    path.push(name);
                    relations.push(hop);
                }
                Ok(GraphPath::walked_back(path, relations))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn find_all_paths(
        &self,
        workspace: WorkspaceId,
        request: &Checked<FindAllPaths>,
    ) -> Result<AllPaths> {
        // Every simple path, shortest first: [`engram_domain::all_paths`]'s search, one
        // statement per node whose neighbours it reads (`STEP_SQL`, as `get_path`'s walk).
        let request = (**request).clone();
        self.pool
            .read(move |tx| {
                let (from, to) = (&request.from_entity, &request.to_entity);
                let (source, target) = node_pair(tx, workspace, from, to)?;
                let mut search = request.search(source, target);
                while let Some(node) = search.wants() {
                    let neighbours = query(tx, STEP_SQL, [node], |row| {
                        Ok(Neighbour {
                            id: row.get("neighbour_id")?,
                            name: row.get("neighbour")?,
                            relation: relation(row)?,
                        })
                    })?;
                    search.give(node, neighbours);
                }
                Ok(AllPaths::of(search))
            })
            .await
    }

    #[instrument(skip_all)]
    async fn find_unlinked_references(
        &self,
        workspace: WorkspaceId,
    ) -> Result<Vec<UnlinkedReference>> {
        // Pairs (source, target) where the source's observations mention the target's whole
        // name (case-insensitive, not inside a longer word) and no relation links the two
        // either way.
        //
        // One pass over the workspace's observations: at every position that starts a word (or
        // a non-word character), the names starting with that word are candidates, and each is
        // checked for the whole name and a word boundary after it.
        self.pool
            .read(move |tx| {
                let nodes: Vec<(i64, String, String)> = query(
                    tx,
                    "SELECT id, name FROM nodes WHERE workspace_id = ?1",
                    [workspace.0],
                    |row| {
                        let name: String = row.get(1)?;
                        Ok((row.get(0)?, name.to_lowercase(), name))
                    },
                )?;
                let mut by_key: HashMap<&str, Vec<(i64, &str, &str)>> = HashMap::new();
                for (id, lower, name) in &nodes {
                    if let Some(key) = key(lower) {
                        by_key
                            .entry(key)
                            .or_default()
                            .push((*id, lower.as_str(), name.as_str()));
                    }
                }
                let linked: HashSet<(i64, i64)> = query(
                    tx,
                    "SELECT from_node_id, to_node_id FROM relations WHERE workspace_id = ?1",
                    [workspace.0],
                    |row| Ok((row.get(0)?, row.get(1)?)),
                )?
                .into_iter()
                .flat_map(|(a, b)| [(a, b), (b, a)])
                .collect();
                let names: HashMap<i64, &str> =
                    nodes.iter().map(|(id, _, n)| (*id, n.as_str())).collect();
                let mut counts: BTreeMap<(&str, &str), i64> = BTreeMap::new();
                // Current facts only: an ended fact's mention is no reference now.
                let mut statement = tx
                    .prepare_cached(
                        "SELECT node_id, content FROM observations
                         WHERE workspace_id = ?1 AND (valid_to IS NULL OR valid_to > engram_now())",
                    )
                    .map_err(crate::error::db)?;
                let mut rows = statement.query([workspace.0]).map_err(crate::error::db)?;
                while let Some(row) = rows.next().map_err(crate::error::db)? {
                    let source: i64 = row.get(0).map_err(crate::error::db)?;
                    let content: String = row.get(1).map_err(crate::error::db)?;
                    let text = content.to_lowercase();
                    let mut mentioned: HashSet<i64> = HashSet::new();
                    let mut previous: Option<char> = None;
                    for (at, c) in text.char_indices() {
                        let starts = previous.is_none_or(|p| !is_word(p));
                        previous = Some(c);
                        if !starts {
                            continue;
                        }
                        let Some(candidates) = key(&text[at..]).and_then(|k| by_key.get(k)) else {
                            continue;
                        };
                        for &(target, lower, _) in candidates {
                            let ends_at_boundary =
                                text[at..].strip_prefix(lower).is_some_and(|rest| {
                                    rest.chars().next().is_none_or(|c| !is_word(c))
                                });
                            if ends_at_boundary
                                && target != source
                                && !linked.contains(&(source, target))
                            {
                                mentioned.insert(target);
                            }
                        }
                    }
                    for target in mentioned {
                        *counts.entry((names[&source], names[&target])).or_default() += 1;
                    }
                }
                Ok(counts
                    .into_iter()
                    .map(|((node, referenced), count)| UnlinkedReference {
                        node: node.to_owned(),
                        referenced_name: referenced.to_owned(),
                        reference_count: count,
                    })
                    .collect())
            })
            .await
    }
}
