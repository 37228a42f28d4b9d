//! One search's candidates ([`search`], `MemoryStore::search`): the nearest observations per
//! query vector (pgvector; HNSW over the whole workspace, an exact scan when the search is
//! narrowed to a node or to types) and the best full-text matches (`english` configuration,
//! any of the query's terms less the very common ones, each weighted by its rarity:
//! [`TextQuery`]), then each candidate's vectors and missing text score. Every statement runs
//! in the caller's read-only snapshot.

use async_trait::async_trait;
use deadpool_postgres::GenericClient;
use engram_domain::search::words;
use engram_domain::search::{
    CandidateQuery, CandidateSet, Gathered, NAMED_FACTS, NAMED_NODES, ObservationRow, QueryVector,
    StoredVector, name_probe,
};
use engram_domain::*;
use engram_domain::{Ordinal, PerspectiveId, Result, WorkspaceId};
use pgvector::Vector;
use tracing::instrument;

use crate::PgStore;
use crate::error::db;
use crate::hnsw::tune_search;
use crate::text_query::TextQuery;

/// The `request.depth` observations nearest `vector` in `perspective` as `(observation id,
/// cosine similarity)`.
async fn nearest(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    request: &CandidateQuery,
    perspective: PerspectiveId,
    vector: &[f32],
) -> Result<Vec<(i64, f64)>> {
    let dims = vector.len();
    let distance = format!("e.embedding::vector({dims}) <=> $4::vector({dims})");
    // Ordering by the indexed expression lets the planner walk the HNSW index; a narrowed
    // search orders by the similarity instead, an exact scan of the few rows it keeps.
    let (join, order) = if !request.is_narrowed() {
        ("", distance.clone())
    } else {
        (
            "JOIN observations o ON o.id = e.observation_id
             JOIN nodes n ON n.id = o.node_id
               AND ($6::text IS NULL OR n.name = $6)
               AND ($7::text[] IS NULL OR n.entity_type = ANY($7))",
            "similarity DESC, e.observation_id".to_owned(),
        )
    };
    let sql = format!(
        "SELECT e.observation_id, (1 - ({distance}))::float8 AS similarity
         FROM embeddings e {join}
         WHERE e.dims = {dims} AND e.workspace_id = $1 AND e.model = $2
           AND e.perspective_id = $3
         ORDER BY {order}
         LIMIT $5"
    );
    let query = Vector::from(vector.to_vec());
    let k = i64::try_from(request.depth).unwrap_or(i64::MAX);
    let statement = client.prepare_cached(&sql).await.map_err(db)?;
    let rows = if join.is_empty() {
        let params: [&(dyn tokio_postgres::types::ToSql + Sync); 5] =
            [&workspace.0, &request.model, &perspective.0, &query, &k];
        client.query(&statement, &params).await
    } else {
        let types = request.types().map(<[String]>::to_vec);
        client
            .query(
                &statement,
                &[
                    &workspace.0,
                    &request.model,
                    &perspective.0,
                    &query,
                    &k,
                    &request.within,
                    &types,
                ],
            )
            .await
    }
    .map_err(db)?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// The stored vectors of the observations `ids` in `perspective`, as `(observation id,
/// vector)`.
async fn candidate_vectors(
    client: &impl GenericClient,
    ids: &[i64],
    model: &str,
    query: &QueryVector,
) -> Result<Vec<StoredVector>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let signs = match query.token_signs {
        Some(_) => "token_signs",
        None => "NULL::bytea",
    };
    let statement = client
        .prepare_cached(&format!(
            "SELECT observation_id, embedding, {signs} FROM embeddings
             WHERE observation_id = ANY($1) AND model = $2 AND perspective_id = $3
               AND dims = $4"
        ))
        .await
        .map_err(db)?;
    let dims = i32::try_from(query.vector.len()).unwrap_or(i32::MAX);
    let rows = client
        .query(&statement, &[&ids, &model, &query.perspective.0, &dims])
        .await
        .map_err(db)?;
    Ok((rows.iter())
        .map(|row| StoredVector {
            observation_id: row.get(0),
            vector: row.get::<_, Vector>(1).to_vec(),
            token_signs: row.get(2),
        })
        .collect())
}

/// The `limit` best full-text matches of `query` as `(observation id, score)`. Every text
/// matching one of its rare lexemes is ranked; of each frequent lexeme's texts
/// ([`TextQuery::frequent`]) that no earlier branch has, the first
/// [`words::FREQUENT_TERM_RANKED`] the scan meets.
async fn text_matches(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    query: &TextQuery,
    limit: usize,
    request: &CandidateQuery,
) -> Result<Vec<(i64, f64)>> {
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let types = request.types().map(<[String]>::to_vec);
    let (rare, frequent) = (query.rare(), query.frequent());
    // Each frequent lexeme's branch leaves out the texts an earlier branch has: the rare
    // lexemes' and those of the frequent lexemes before it.
    let earlier: Vec<String> = (0..frequent.len())
        .map(|i| {
            let before = rare
                .iter()
                .map(String::as_str)
                .chain(frequent[..i].iter().copied());
            before.collect::<Vec<_>>().join(" | ")
        })
        .collect();
    let ranked = words::FREQUENT_TERM_RANKED;
    let mut parameters: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> =
        vec![&workspace.0, &limit];
    // Without a filter the nodes need not be joined (half the time of a common word's search:
    // every match would be joined to its node only to pass `NULL` tests).
    let (join, narrowed) = if !request.is_narrowed() {
        ("", "")
    } else {
        parameters.push(&request.within);
        parameters.push(&types);
        (
            "JOIN nodes n ON n.id = o.node_id",
            "AND ($3::text IS NULL OR n.name = $3)
             AND ($4::text[] IS NULL OR n.entity_type = ANY($4))",
        )
    };
    // The facts that hold now, or that held at `as_of`.
    let held = match &request.as_of {
        None => "(o.valid_to IS NULL OR o.valid_to > now())".to_owned(),
        Some(as_of) => {
            parameters.push(as_of);
            let at = parameters.len();
            format!("o.valid_from <= ${at} AND (o.valid_to IS NULL OR o.valid_to > ${at})")
        }
    };
    let matching = |condition: &str| {
        format!(
            "SELECT o.id, o.content_tsv FROM observations o {join}
             WHERE o.workspace_id = $1 AND {condition} {narrowed} AND {held}"
        )
    };
    let mut branches = Vec::new();
    if let Some(rare) = &rare {
        parameters.push(rare);
        branches.push(matching(&format!(
            "o.content_tsv @@ ${}::text::tsquery",
            parameters.len()
        )));
    }
    if !frequent.is_empty() {
        parameters.push(&ranked);
    }
    let ranked = parameters.len();
    for (lexeme, earlier) in frequent.iter().zip(&earlier) {
        parameters.push(lexeme);
        let mut condition = format!("o.content_tsv @@ ${}::text::tsquery", parameters.len());
        if !earlier.is_empty() {
            parameters.push(earlier);
            condition += &format!(
                " AND NOT o.content_tsv @@ ${}::text::tsquery",
                parameters.len()
            );
        }
        branches.push(format!("({} LIMIT ${ranked})", matching(&condition)));
    }
    let branches = branches.join(" UNION ALL ");
    let rank = query.rank("m.content_tsv", parameters.len() + 1);
    query.parameters(&mut parameters);
    let sql = format!(
        "SELECT m.id, {rank}::float8 AS score
         FROM ({branches}) m
         ORDER BY score DESC, m.id
         LIMIT $2"
    );
    // A frequent word's branch is planned for its lexemes each time: a word in most texts
    // is best found by reading the table until enough match, a rarer one through the index,
    // and a cached statement's generic plan, blind to the word, always took the index (55 ms
    // for a word in 64 % of a million texts, 2 ms planned for it).
    let statement = match frequent.is_empty() {
        false => client.prepare(&sql).await,
        true => client.prepare_cached(&sql).await,
    };
    let rows = (client.query(&statement.map_err(db)?, &parameters).await).map_err(db)?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// The newest [`NAMED_FACTS`] facts the search sees of each of the [`NAMED_NODES`] nodes whose
/// names `text` writes ([`name_probe`]), within the search's scope.
async fn named_facts(
    client: &impl GenericClient,
    workspace: WorkspaceId,
    text: &str,
    request: &CandidateQuery,
) -> Result<Vec<i64>> {
    let (words, required) = name_probe(text);
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let types = request.types().map(<[String]>::to_vec);
    let (required, nodes, facts) = (required as i64, NAMED_NODES as i64, NAMED_FACTS as i64);
    let mut parameters: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
        &workspace.0,
        &words,
        &required,
        &nodes,
        &request.within,
        &types,
        &facts,
    ];
    let held = match &request.as_of {
        None => "(o.valid_to IS NULL OR o.valid_to > now())".to_owned(),
        Some(as_of) => {
            parameters.push(as_of);
            "o.valid_from <= $8 AND (o.valid_to IS NULL OR o.valid_to > $8)".to_owned()
        }
    };
    let sql = format!(
        "WITH held AS (
             SELECT w.node_id, count(*) AS held
             FROM node_name_words w
             WHERE w.workspace_id = $1 AND w.word = ANY($2::text[])
             GROUP BY w.node_id),
         named AS (
             SELECT h.node_id FROM held h
             WHERE h.held = $3
                OR h.held = (SELECT count(*) FROM node_name_words x WHERE x.node_id = h.node_id)
             ORDER BY h.node_id
             LIMIT $4),
         facts AS (
             SELECT o.id, row_number() OVER (PARTITION BY o.node_id ORDER BY o.ordinal DESC) AS nth
             FROM named
             JOIN nodes n ON n.id = named.node_id
             JOIN observations o ON o.node_id = n.id
             WHERE ($5::text IS NULL OR n.name = $5)
               AND ($6::text[] IS NULL OR n.entity_type = ANY($6))
               AND {held})
         SELECT id FROM facts WHERE nth <= $7"
    );
    let statement = client.prepare_cached(&sql).await.map_err(db)?;
    let rows = (client.query(&statement, &parameters).await).map_err(db)?;
    Ok(rows.iter().map(|row| row.get(0)).collect())
}

/// The full-text scores of `query` for the observations `ids` that match it.
async fn text_scores(
    client: &impl GenericClient,
    query: &TextQuery,
    ids: &[i64],
) -> Result<Vec<(i64, f64)>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let any = query.any();
    let mut parameters: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![&any, &ids];
    let rank = query.rank("o.content_tsv", parameters.len() + 1);
    query.parameters(&mut parameters);
    let sql = format!(
        "SELECT o.id, {rank}::float8
         FROM observations o
         WHERE o.id = ANY($2) AND o.content_tsv @@ $1::text::tsquery"
    );
    let statement = client.prepare_cached(&sql).await.map_err(db)?;
    let rows = client.query(&statement, &parameters).await.map_err(db)?;
    Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
}

/// The observations `ids` that hold now (`as_of` `None`) or held at `as_of`, with their
/// nodes, each text as it read then.
async fn observation_rows(
    client: &impl GenericClient,
    ids: &[i64],
    as_of: Option<Timestamp>,
) -> Result<Vec<ObservationRow>> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let rows = match as_of {
        None => {
            let statement = client
                .prepare_cached(
                    "SELECT o.id, n.name, n.entity_type, n.summary, o.ordinal, o.content,
                            o.created_at, o.valid_from
                     FROM observations o
                     JOIN nodes n ON n.id = o.node_id
                     WHERE o.id = ANY($1) AND (o.valid_to IS NULL OR o.valid_to > now())",
                )
                .await
                .map_err(db)?;
            client.query(&statement, &[&ids]).await
        }
        Some(at) => {
            let statement = client
                .prepare_cached(
                    "SELECT o.id, n.name, n.entity_type, n.summary, o.ordinal,
                            coalesce((SELECT v.content FROM observation_versions v
                                      WHERE v.observation_id = o.id AND v.replaced_at > $2
                                      ORDER BY v.replaced_at LIMIT 1), o.content),
                            o.created_at, o.valid_from
                     FROM observations o
                     JOIN nodes n ON n.id = o.node_id
                     WHERE o.id = ANY($1) AND o.valid_from <= $2
                       AND (o.valid_to IS NULL OR o.valid_to > $2)",
                )
                .await
                .map_err(db)?;
            client.query(&statement, &[&ids, &at]).await
        }
    }
    .map_err(db)?;
    Ok(rows
        .iter()
        .map(|row| ObservationRow {
            observation_id: row.get(0),
            name: row.get(1),
            entity_type: row.get(2),
            summary: row.get(3),
            ordinal: Ordinal(row.get(4)),
            content: row.get(5),
            created_at: row.get(6),
            valid_from: row.get(7),
        })
        .collect())
}

#[async_trait]
impl SearchStore for PgStore {
    #[instrument(skip_all)]
    async fn node_use(
        &self,
        workspace: WorkspaceId,
        names: &[String],
        first: &str,
    ) -> Result<Vec<NodeUse>> {
        read!(self, |tx| async {
            crate::access::node_use(&tx, workspace, names, first).await
        })
    }

    /// Gathers the candidates of `request` (see [`engram_domain::MemoryStore::search`]).
    #[instrument(skip_all)]
    async fn search(&self, request: &CandidateQuery) -> Result<Gathered> {
        let workspace = request.workspace;
        let shares = &self.lexeme_shares;
        read!(self, |tx| async {
            let mut set = CandidateSet::new(request);
            // Independent statements go out together: tokio-postgres pipelines the queries of
            // futures polled at once on one connection, in the order they are first polled, so a
            // search costs three round trips. The HNSW settings go first, ahead of the
            // nearest-neighbour queries they are for.
            let tune = async {
                match request.vectors.is_empty() {
                    true => Ok(()),
                    false => tune_search(&tx).await,
                }
            };
            let nearest = (request.vectors.iter())
                .map(|v| nearest(&tx, workspace, request, v.perspective, &v.vector));
            let named = async {
                match &request.text {
                    Some(text) => named_facts(&tx, workspace, text, request).await,
                    None => Ok(Vec::new()),
                }
            };
            let text = async {
                let Some(text) = &request.text else {
                    return Ok((None, Vec::new()));
                };
                let Some(query) = TextQuery::of(&tx, text, shares).await? else {
                    return Ok((None, Vec::new()));
                };
                let matches =
                    text_matches(&tx, workspace, &query, request.text_depth, request).await?;
                Ok((Some(query), matches))
            };
            let perspectives = async {
                match request.perspectives {
                    true => crate::vectors::perspectives(&tx, workspace).await,
                    false => Ok(Vec::new()),
                }
            };
            let aliased = crate::merge::aliased_nodes(&tx, workspace, &request.alias_runs);
            let ((), nearest, (query, text), named, perspectives, aliased) = futures::try_join!(
                tune,
                futures::future::try_join_all(nearest),
                text,
                named,
                perspectives,
                aliased
            )?;
            for (index, found) in nearest.into_iter().enumerate() {
                set.add_nearest(index, found);
            }
            set.add_text_matches(text);
            set.add_named(named);
            // Every candidate's vector: hybrid ranking compares candidates with one another,
            // and the similarity of those the embeddings did not find comes from it. ts_rank of a
            // few rows by id is cheap here, unlike ranking every match. The candidates are known
            // now, so their rows come in the same round trip.
            let ids = set.ids();
            let fills =
                (request.vectors.iter()).map(|v| candidate_vectors(&tx, &ids, &request.model, v));
            let missing_text = set.without_text_score();
            let text_fill = async {
                match &query {
                    Some(query) => text_scores(&tx, query, &missing_text).await,
                    None => Ok(Vec::new()),
                }
            };
            let (fills, text_fill, rows) = futures::try_join!(
                futures::future::try_join_all(fills),
                text_fill,
                observation_rows(&tx, &ids, request.as_of)
            )?;
            for (index, found) in fills.into_iter().enumerate() {
                set.set_vectors(index, found);
            }
            set.set_text_scores(text_fill);
            Ok(Gathered {
                candidates: set.finish(rows),
                perspectives,
                aliased,
            })
        })
    }

    /// The `(from, to)` names of every relation of the workspace, each pair once.
    #[instrument(skip_all)]
    async fn related_pairs(&self, workspace: WorkspaceId) -> Result<Vec<(String, String)>> {
        read!(self, |tx| async {
            let rows = tx
                .query(
                    "SELECT DISTINCT a.name, b.name
                     FROM relations r
                     JOIN nodes a ON a.id = r.from_node_id
                     JOIN nodes b ON b.id = r.to_node_id
                     WHERE r.workspace_id = $1",
                    &[&workspace.0],
                )
                .await
                .map_err(db)?;
            Ok(rows.iter().map(|row| (row.get(0), row.get(1))).collect())
        })
    }
}
