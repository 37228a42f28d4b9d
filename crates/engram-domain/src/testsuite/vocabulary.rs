use std::fmt::Write;
use std::sync::Arc;

use expect_test::expect;

use super::*;
use crate::{
    DescribeNode, Error, GetGraphVocabulary, GetRelations, GetSubgraph, Memory, MemoryStore,
    WorkspaceId,
};

/// Ada and Bo are people, Cy a project, Dee a person apart: Ada -knows-> Bo, Ada -leads-> Cy,
/// Bo -works_on-> Cy, Cy -depends_on-> Cy (a loop), Bo -knows-> Ada.
async fn small_team(memory: &Memory, ws: WorkspaceId) {
    let entities = vec![
        entity("Ada", "person", &["writes the compiler", "likes tea"]),
        entity("Bo", "person", &[]),
        entity("Cy", "project", &[]),
        entity("Dee", "person", &[]),
    ];
    memory
        .call(ws, CreateEntities::new(entities))
        .await
        .unwrap();
    create_relations(
        memory,
        ws,
        &[
            ("Ada", "knows", "Bo"),
            ("Ada", "leads", "Cy"),
            ("Bo", "works_on", "Cy"),
            ("Cy", "depends_on", "Cy"),
            ("Bo", "knows", "Ada"),
        ],
    )
    .await;
}

fn field_of(error: &Error) -> &str {
    match error {
        Error::InvalidArgument { field, .. } => field,
        other => panic!("not an invalid argument: {other}"),
    }
}

pub async fn the_vocabulary_counts_types_and_a_node_is_described_by_its_relations(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "team").await;
    small_team(&memory, ws).await;
    // Another workspace's nodes and relations count only there.
    let elsewhere = memory.create_workspace("elsewhere").await.unwrap().id;
    create_nodes(&memory, elsewhere, &["X", "Y"]).await;
    create_relations(&memory, elsewhere, &[("X", "knows", "Y")]).await;

    let vocabulary = memory
        .call(ws, GetGraphVocabulary::default())
        .await
        .unwrap();
    let counts = |types: &[crate::TypeCount]| {
        let counted: Vec<String> = types
            .iter()
            .map(|t| format!("{} {}", t.name, t.count))
            .collect();
        counted.join(", ")
    };
    assert_eq!(counts(&vocabulary.entity_types), "person 3, project 1");
    assert_eq!(
        counts(&vocabulary.relation_types),
        "knows 2, depends_on 1, leads 1, works_on 1"
    );
    assert_eq!(vocabulary.notice, None);
    let cut = memory
        .call(ws, GetGraphVocabulary { limit: 1 })
        .await
        .unwrap();
    assert_eq!(counts(&cut.entity_types), "person 3");
    assert_eq!(counts(&cut.relation_types), "knows 2");
    assert!(cut.notice.unwrap().contains("more than 1"));
    let refused = memory
        .call(ws, GetGraphVocabulary { limit: 0 })
        .await
        .unwrap_err();
    assert_eq!(field_of(&refused), "limit");

    let describe = async |request: DescribeNode| {
        let node = memory.call(ws, request).await.unwrap();
        let mut text = format!(
            "{}: {} facts {} degree {}/{}/{}\n",
            node.name,
            node.entity_type,
            node.observation_count,
            node.degree.outgoing,
            node.degree.incoming,
            node.degree.total
        );
        for n in &node.neighbours {
            writeln!(
                text,
                "{} {} {} ({})",
                n.direction, n.relation_type, n.name, n.entity_type
            )
            .unwrap();
        }
        if let Some(notice) = node.notice {
            writeln!(text, "notice: {notice}").unwrap();
        }
        text
    };
    expect![[r#"
        Ada: person facts 2 degree 2/1/3
        out knows Bo (person)
        in knows Bo (person)
        out leads Cy (project)
    "#]]
    .assert_eq(&describe(DescribeNode::new("Ada")).await);
    expect![[r#"
        Cy: project facts 0 degree 1/3/4
        in leads Ada (person)
        in works_on Bo (person)
        out depends_on Cy (project)
        in depends_on Cy (project)
    "#]]
    .assert_eq(&describe(DescribeNode::new("Cy")).await);
    expect![[r#"
        Cy: project facts 0 degree 1/3/4
        in leads Ada (person)
        notice: more than 1 neighbours: ask with a higher limit (at most 1,000)
    "#]]
    .assert_eq(
        &describe(DescribeNode {
            limit: 1,
            ..DescribeNode::new("Cy")
        })
        .await,
    );
    expect![[r#"
        Dee: person facts 0 degree 0/0/0
    "#]]
    .assert_eq(&describe(DescribeNode::new("Dee")).await);
    let missing = memory.call(ws, DescribeNode::new("X")).await.unwrap_err();
    assert_eq!(missing, Error::node_not_found("X"));
    let refused = memory.call(
        ws,
        DescribeNode {
            limit: 1_001,
            ..DescribeNode::new("Ada")
        },
    );
    assert_eq!(field_of(&refused.await.unwrap_err()), "limit");
}

pub async fn subgraphs_grow_from_several_nodes_and_relations_filter_by_ends_and_type(
    store: Arc<dyn MemoryStore>,
) {
    let (memory, ws) = memory_with_workspace(store, "team").await;
    small_team(&memory, ws).await;
    let render = |hood: &crate::Neighborhood| {
        let nodes: Vec<&str> = hood.nodes.iter().map(|n| n.name.as_str()).collect();
        let relations: Vec<String> = (hood.relations.iter())
            .map(|r| format!("{}-{}->{}", r.from, r.relation_type, r.to))
            .collect();
        format!("{} | {}", nodes.join(" "), relations.join(" "))
    };
    let subgraph = async |names: &[&str], depth| {
        render(
            &memory
                .call(ws, GetSubgraph::new(names, depth))
                .await
                .unwrap(),
        )
    };
    assert_eq!(subgraph(&["Dee", "Bo"], 0).await, "Bo Dee | ");
    assert_eq!(
        subgraph(&["Dee", "Bo"], 1).await,
        "Bo Dee Ada Cy | Ada-knows->Bo Ada-leads->Cy Bo-knows->Ada Bo-works_on->Cy Cy-depends_on->Cy"
    );
    let missing = memory
        .call(ws, GetSubgraph::new(&["Ada", "Ghost"], 1))
        .await;
    assert_eq!(missing.unwrap_err(), Error::node_not_found("Ghost"));
    let refused = memory
        .call(ws, GetSubgraph::new(&["Ada"], 4))
        .await
        .unwrap_err();
    assert_eq!(field_of(&refused), "depth");
    let many: Vec<String> = (0..101).map(|i| format!("n{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let refused = memory
        .call(ws, GetSubgraph::new(&many, 1))
        .await
        .unwrap_err();
    assert_eq!(field_of(&refused), "names");
    let refused = memory.call(ws, GetSubgraph::new(&[], 1)).await.unwrap_err();
    assert_eq!(field_of(&refused), "names");

    let relations = async |request: GetRelations| {
        let found = memory.call(ws, request).await.unwrap();
        let mut rows: Vec<String> = (found.relations.iter())
            .map(|r| format!("{}-{}->{}", r.from, r.relation_type, r.to))
            .collect();
        rows.extend(found.notice);
        rows.join(" ")
    };
    let filter = |from: Option<&str>, to: Option<&str>, kind: Option<&str>| GetRelations {
        from_entity: from.map(str::to_owned),
        to_entity: to.map(str::to_owned),
        relation_type: kind.map(str::to_owned),
        limit: 100,
    };
    assert_eq!(
        relations(filter(None, None, None)).await,
        "Ada-knows->Bo Ada-leads->Cy Bo-knows->Ada Bo-works_on->Cy Cy-depends_on->Cy"
    );
    assert_eq!(
        relations(filter(Some("Ada"), None, None)).await,
        "Ada-knows->Bo Ada-leads->Cy"
    );
    assert_eq!(
        relations(filter(None, Some("Cy"), None)).await,
        "Ada-leads->Cy Bo-works_on->Cy Cy-depends_on->Cy"
    );
    assert_eq!(
        relations(filter(None, None, Some("knows"))).await,
        "Ada-knows->Bo Bo-knows->Ada"
    );
    assert_eq!(
        relations(filter(Some("Bo"), Some("Cy"), Some("works_on"))).await,
        "Bo-works_on->Cy"
    );
    assert_eq!(relations(filter(None, None, Some("owns"))).await, "");
    let cut = GetRelations {
        limit: 1,
        ..filter(None, None, Some("knows"))
    };
    assert_eq!(
        relations(cut).await,
        "Ada-knows->Bo more than 1 relations: ask with a higher limit (at most 1,000)"
    );
    let missing = memory.call(ws, filter(Some("Ghost"), None, None)).await;
    assert_eq!(missing.unwrap_err(), Error::node_not_found("Ghost"));
    let refused = memory
        .call(ws, filter(None, None, Some("")))
        .await
        .unwrap_err();
    assert_eq!(field_of(&refused), "relation_type");
}
