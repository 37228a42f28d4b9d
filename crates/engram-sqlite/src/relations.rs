//! Relation tools: create, delete, end, rename, list between two nodes.

use async_trait::async_trait;
use engram_domain::*;
use rusqlite::{OptionalExtension, params};
use tracing::instrument;

use crate::SqliteStore;
use crate::error::{db, taken_or_db};
use crate::nodes::{node_ids, node_pair, relation};
use crate::sql::ONE_RELATION;
use crate::sql::query;
use crate::validity;

/// The columns of the unique constraint on relations, as SQLite names them in its message.
const RELATIONS_UNIQUE: &str = "relations.workspace_id, relations.from_node_id, \
                                relations.to_node_id, relations.relation_type";

#[async_trait]
impl RelationStore for SqliteStore {
    #[instrument(skip_all, fields(count = request.relations.len()))]
    async fn create_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateRelations>,
    ) -> Result<CreatedRelations> {
        let relations = request.relations.clone();
        self.pool
            .write(move |tx| {
                let relations = each_relation_once(&relations);
                let ids = node_ids(
                    tx,
                    workspace,
                    relations
                        .iter()
                        .flat_map(|r| [r.from_entity.as_str(), r.to_entity.as_str()]),
                )?;
                let mut insert = tx
                    .prepare_cached(
                        "INSERT INTO relations (workspace_id, from_node_id, to_node_id, relation_type,
                                                created_at, valid_from)
                         VALUES (?1, ?2, ?3, ?4, engram_now(), coalesce(?5, engram_now()))
                         ON CONFLICT (workspace_id, from_node_id, to_node_id, relation_type) DO NOTHING",
                    )
                    .map_err(db)?;
                let mut result = CreatedRelations::default();
                for spec in relations {
                    let (from, to) = (ids.get(&spec.from_entity), ids.get(&spec.to_entity));
                    result.record(spec, [from.is_none(), to.is_none()], || {
                        let valid_from = spec.valid_from.map(crate::micros);
                        let row = params![workspace.0, from, to, spec.relation_type, valid_from];
                        Ok(insert.execute(row).map_err(db)? > 0)
                    })?;
                }
                Ok(result)
            })
            .await
    }

    #[instrument(skip_all, fields(count = request.relations.len()))]
    async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteRelations>,
    ) -> Result<DeletedRelations> {
        let relations = request.relations.clone();
        self.pool
            .write(move |tx| {
                let mut delete = tx
                    .prepare_cached(&format!("DELETE FROM relations WHERE {ONE_RELATION}"))
                    .map_err(db)?;
                let mut result = DeletedRelations::default();
                for spec in each_relation_once(&relations) {
                    let deleted = delete
                        .execute(params![
                            workspace.0,
                            spec.from_entity,
                            spec.to_entity,
                            spec.relation_type
                        ])
                        .map_err(db)?;
                    if deleted > 0 {
                        result.deleted += 1;
                    } else {
                        result.not_found += 1;
                    }
                }
                Ok(result)
            })
            .await
    }

    #[instrument(skip_all)]
    async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<RenameRelationType>,
    ) -> Result<RelationSpec> {
        let (relation, new_type) = (request.relation(), request.new_type.clone());
        self.pool
            .write(move |tx| {
                let renamed = tx
                    .query_row(
                        &format!(
                            "UPDATE relations SET relation_type = ?5 WHERE {ONE_RELATION} RETURNING id"
                        ),
                        params![
                            workspace.0,
                            relation.from_entity,
                            relation.to_entity,
                            relation.relation_type,
                            new_type
                        ],
                        |row| row.get::<_, i64>(0),
                    )
                    .optional()
                    .map_err(|e| {
                        taken_or_db(e, RELATIONS_UNIQUE, || {
                            Error::relation_taken(&relation, &new_type)
                        })
                    })?;
                if renamed.is_none() {
                    return Err(Error::relation_not_found(&relation));
                }
                Ok(RelationSpec {
                    relation_type: new_type,
                    ..relation
                })
            })
            .await
    }

    #[instrument(skip_all)]
    async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelationsBetween>,
    ) -> Result<Vec<Relation>> {
        let (entity_a, entity_b) = (request.entity_a.clone(), request.entity_b.clone());
        let time = request.read_time();
        self.pool
            .read(move |tx| {
                let (a, b) = node_pair(tx, workspace, &entity_a, &entity_b)?;
                let between = "(r.from_node_id = ?1 AND r.to_node_id = ?2)
                               OR (r.from_node_id = ?2 AND r.to_node_id = ?1)";
                // Now, the current relations; in a read of the past, those that held then (or
                // ever), each with its period.
                match validity::past(time) {
                    None => query(
                        tx,
                        &format!(
                            "SELECT f.name AS from_name, t.name AS to_name, r.relation_type
                             FROM relations r
                             JOIN nodes f ON f.id = r.from_node_id
                             JOIN nodes t ON t.id = r.to_node_id
                             WHERE {between}
                             ORDER BY 1, 2, 3"
                        ),
                        params![a, b],
                        relation,
                    ),
                    Some(at) => query(
                        tx,
                        &format!(
                            "SELECT f.name AS from_name, t.name AS to_name, r.relation_type,
                                    r.valid_from, r.valid_to
                             FROM {} r
                             JOIN nodes f ON f.id = r.from_node_id
                             JOIN nodes t ON t.id = r.to_node_id
                             ORDER BY 1, 2, 3, 4, 5",
                            validity::relations_seen(between, 3)
                        ),
                        params![a, b, at],
                        validity::dated_relation,
                    ),
                }
            })
            .await
    }
}
