//! Relation tools: create, delete, rename, list between two nodes.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::*;
use tracing::instrument;

use crate::PgStore;
use crate::error::{db, taken_or_db};
use crate::nodes::{relation, relations_at};
use crate::observations::node_pair;

/// The unique constraint on `(workspace_id, from_node_id, to_node_id, relation_type)`, named by
/// PostgreSQL, which cuts generated names to 63 bytes (hence `relation_typ`).
const RELATIONS_UNIQUE: &str = "relations_workspace_id_from_node_id_to_node_id_relation_typ_key";

/// Parallel arrays of from names, to names and types, without repeated relations.
pub(crate) fn columns(relations: &[RelationSpec]) -> (Vec<&RelationSpec>, [Vec<&str>; 3]) {
    let distinct = each_relation_once(relations);
    let columns = [
        distinct.iter().map(|r| r.from_entity.as_str()).collect(),
        distinct.iter().map(|r| r.to_entity.as_str()).collect(),
        distinct.iter().map(|r| r.relation_type.as_str()).collect(),
    ];
    (distinct, columns)
}

/// Runs `sql/create_relations.sql` for distinct relations given as parallel columns (from,
/// to, type), creation times (`None`: now) and starts of validity (`None`: the creation);
/// one row per relation, in order, saying which endpoints are missing and whether it was
/// created.
pub(crate) async fn insert_relations(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    [from, to, types]: [&Vec<&str>; 3],
    [created_at, valid_from]: [&[Option<Timestamp>]; 2],
) -> Result<Vec<tokio_postgres::Row>> {
    let statement = client
        .prepare_cached(include_str!("sql/create_relations.sql"))
        .await
        .map_err(db)?;
    client
        .query(
            &statement,
            &[&workspace.0, from, to, types, &created_at, &valid_from],
        )
        .await
        .map_err(db)
}

#[async_trait]
impl RelationStore for PgStore {
    #[instrument(skip_all, fields(count = request.relations.len()))]
    async fn create_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<CreateRelations>,
    ) -> Result<CreatedRelations> {
        let created = write!(self, |tx| async {
            let (distinct, [from, to, types]) = columns(&request.relations);
            let created_at: Vec<Option<Timestamp>> = vec![None; distinct.len()];
            let valid_from: Vec<Option<Timestamp>> =
                distinct.iter().map(|spec| spec.valid_from).collect();
            let rows = insert_relations(
                &tx,
                workspace,
                [&from, &to, &types],
                [&created_at, &valid_from],
            )
            .await?;
            let mut result = CreatedRelations::default();
            for (spec, row) in distinct.into_iter().zip(&rows) {
                let missing = [row.get("from_missing"), row.get("to_missing")];
                result.record(spec, missing, || Ok(row.get("created")))?;
            }
            Ok(result)
        })?;
        self.written.wrote(request.relations.len(), &self.direct);
        Ok(created)
    }

    #[instrument(skip_all, fields(count = request.relations.len()))]
    async fn delete_relations(
        &self,
        workspace: WorkspaceId,
        request: &Checked<DeleteRelations>,
    ) -> Result<DeletedRelations> {
        let deleted = write!(self, |tx| async {
            let (distinct, [from, to, types]) = columns(&request.relations);
            let deleted = tx
                .execute(
                    "DELETE FROM relations r
                     USING nodes f, nodes t,
                           unnest($2::text[], $3::text[], $4::text[])
                           AS d (from_name, to_name, relation_type)
                     WHERE f.workspace_id = $1 AND f.name = d.from_name
                       AND t.workspace_id = $1 AND t.name = d.to_name
                       AND r.from_node_id = f.id AND r.to_node_id = t.id
                       AND r.relation_type = d.relation_type",
                    &[&workspace.0, &from, &to, &types],
                )
                .await
                .map_err(db)?;
            Ok(DeletedRelations {
                deleted,
                not_found: distinct.len() as u64 - deleted,
            })
        })?;
        self.written.wrote(request.relations.len(), &self.direct);
        Ok(deleted)
    }

    #[instrument(skip_all)]
    async fn rename_relation_type(
        &self,
        workspace: WorkspaceId,
        request: &Checked<RenameRelationType>,
    ) -> Result<RelationSpec> {
        let (relation, new_type) = (&request.relation(), request.new_type.as_str());
        write!(self, |tx| async {
            let updated = tx
                .execute(
                    "UPDATE relations r SET relation_type = $5
                     FROM nodes f, nodes t
                     WHERE f.workspace_id = $1 AND f.name = $2
                       AND t.workspace_id = $1 AND t.name = $3
                       AND r.from_node_id = f.id AND r.to_node_id = t.id AND r.relation_type = $4",
                    &[
                        &workspace.0,
                        &relation.from_entity,
                        &relation.to_entity,
                        &relation.relation_type,
                        &new_type,
                    ],
                )
                .await
                .map_err(|e| {
                    taken_or_db(e, RELATIONS_UNIQUE, || {
                        Error::relation_taken(relation, new_type)
                    })
                })?;
            if updated == 0 {
                return Err(Error::relation_not_found(relation));
            }
            Ok(RelationSpec {
                relation_type: new_type.to_owned(),
                ..relation.clone()
            })
        })
    }

    #[instrument(skip_all)]
    async fn get_relations_between(
        &self,
        workspace: WorkspaceId,
        request: &Checked<GetRelationsBetween>,
    ) -> Result<Vec<Relation>> {
        read!(self, |tx| async {
            let (a, b) = node_pair(&tx, workspace, &request.entity_a, &request.entity_b).await?;
            let time = request.read_time();
            if !time.is_now() {
                // Both endpoints among the two, a relation of one with itself only when the
                // two are one.
                let relations = relations_at(&tx, &[a, b], Endpoints::Both, time).await?;
                return Ok((relations.into_iter())
                    .filter(|r| a == b || r.from != r.to)
                    .collect());
            }
            let rows = tx
                .query(
                    "SELECT f.name AS from_name, t.name AS to_name, r.relation_type
                     FROM relations r
                     JOIN nodes f ON f.id = r.from_node_id
                     JOIN nodes t ON t.id = r.to_node_id
                     WHERE (r.from_node_id = $1 AND r.to_node_id = $2)
                        OR (r.from_node_id = $2 AND r.to_node_id = $1)
                     ORDER BY 1, 2, 3",
                    &[&a, &b],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(relation).collect())
        })
    }
}
