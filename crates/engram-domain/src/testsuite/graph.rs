use std::fmt::Write;
use std::sync::Arc;

use expect_test::expect;

use super::*;
use crate::{
    Error, GraphPath, Memory, MemoryStore, Neighborhood, NewNode, NodeBrief, UnlinkedReference,
    WorkspaceId,
};
use crate::{FindUnlinkedReferences, GetOrphanedNodes};

/// One line per node (`name: type`, with summary and tags when set), then one per relation.
fn render_neighborhood(neighborhood: &Neighborhood) -> String {
    let mut text = String::new();
    for node in &neighborhood.nodes {
        write!(text, "{}: {}", node.name, node.entity_type).unwrap();
        if let Some(summary) = &node.summary {
            write!(text, " \"{summary}\"").unwrap();
        }
        if !node.tags.is_empty() {
            write!(text, " {:?}", node.tags).unwrap();
        }
        text.push('\n');
    }
    for relation in &neighborhood.relations {
        let (from, kind, to) = (&relation.from, &relation.relation_type, &relation.to);
        writeln!(text, "{from} -{kind}-> {to}").unwrap();
    }
    text
}

/// `found`, the path on one line, then the relation of each hop.
fn render_path(path: &GraphPath) -> String {
    let mut text = format!("found: {}\npath: {}\n", path.found, path.path.join(" > "));
    for relation in &path.relations {
        let (from, kind, to) = (&relation.from, &relation.relation_type, &relation.to);
        writeln!(text, "{from} -{kind}-> {to}").unwrap();
    }
    text
}

/// A -> B -> C -> A is a cycle; C -> D -> E hangs off it; X is unrelated.
async fn cyclic_graph(memory: &Memory, ws: WorkspaceId) {
    let a = NewNode {
        summary: Some("the start".into()),
        tags: strings(&["root", "x"]),
        ..entity("A", "hub", &["a fact"])
    };
    memory.call(ws, CreateEntities::new(vec![a])).await.unwrap();
    create_nodes(memory, ws, &["B", "C", "D", "E", "X"]).await;
    create_relations(
        memory,
        ws,
        &[
            ("A", "ab", "B"),
            ("B", "bc", "C"),
            ("C", "ca", "A"),
            ("C", "cd", "D"),
            ("D", "de", "E"),
        ],
    )
    .await;
}

pub async fn neighborhood_walks_relations_both_ways_through_a_cycle(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    cyclic_graph(&memory, ws).await;
    let around = async |name: &str, depth| {
        render_neighborhood(
            &memory
                .call(ws, GetNeighborhood::new(name, depth))
                .await
                .unwrap(),
        )
    };

    expect![[r#"
        A: hub "the start" ["root", "x"]
    "#]]
    .assert_eq(&around("A", 0).await);
    // C is reached against C -ca-> A.
    expect![[r#"
        A: hub "the start" ["root", "x"]
        B: thing
        C: thing
        A -ab-> B
        B -bc-> C
        C -ca-> A
    "#]]
    .assert_eq(&around("A", 1).await);
    expect![[r#"
        A: hub "the start" ["root", "x"]
        B: thing
        C: thing
        D: thing
        A -ab-> B
        B -bc-> C
        C -ca-> A
        C -cd-> D
    "#]]
    .assert_eq(&around("A", 2).await);
    // Nearest first, not by name; only relations among the nodes found (not B -bc-> C).
    expect![[r#"
        E: thing
        D: thing
        C: thing
        C -cd-> D
        D -de-> E
    "#]]
    .assert_eq(&around("E", 2).await);
    expect![[r#"
        D: thing
        C: thing
        E: thing
        A: hub "the start" ["root", "x"]
        B: thing
        A -ab-> B
        B -bc-> C
        C -ca-> A
        C -cd-> D
        D -de-> E
    "#]]
    .assert_eq(&around("D", 6).await);
    expect![[r#"
        X: thing
    "#]]
    .assert_eq(&around("X", 6).await);

    assert_eq!(
        memory
            .call(ws, GetNeighborhood::new("Ghost", 1))
            .await
            .unwrap_err(),
        Error::node_not_found("Ghost")
    );
}

pub async fn get_path_finds_a_shortest_path_in_either_direction(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(
        &memory,
        ws,
        &["Start", "L1", "L2", "L3", "M", "End", "Y", "Z"],
    )
    .await;
    // A long way round, all forwards, and a short one whose second hop runs against End -> M;
    // L2 <-> L3 and Y -> Z add a cycle and a separate component.
    create_relations(
        &memory,
        ws,
        &[
            ("Start", "next", "L1"),
            ("L1", "next", "L2"),
            ("L2", "next", "L3"),
            ("L3", "back", "L2"),
            ("L3", "next", "End"),
            ("Start", "via", "M"),
            ("End", "toward", "M"),
            ("Y", "yz", "Z"),
        ],
    )
    .await;
    let path = async |from: &str, to: &str| {
        render_path(&memory.call(ws, GetPath::new(from, to)).await.unwrap())
    };

    expect![[r#"
        found: true
        path: Start > M > End
        Start -via-> M
        End -toward-> M
    "#]]
    .assert_eq(&path("Start", "End").await);
    expect![[r#"
        found: true
        path: End > M > Start
        End -toward-> M
        Start -via-> M
    "#]]
    .assert_eq(&path("End", "Start").await);
    expect![[r#"
        found: true
        path: L1 > Start > M
        Start -next-> L1
        Start -via-> M
    "#]]
    .assert_eq(&path("L1", "M").await);
    expect![[r#"
        found: true
        path: Z > Y
        Y -yz-> Z
    "#]]
    .assert_eq(&path("Z", "Y").await);

    // Disconnected, and to itself.
    assert_eq!(
        memory.call(ws, GetPath::new("Start", "Y")).await.unwrap(),
        GraphPath::default()
    );
    assert_eq!(
        memory.call(ws, GetPath::new("M", "M")).await.unwrap(),
        GraphPath {
            found: true,
            path: strings(&["M"]),
            relations: Vec::new(),
        }
    );
    for (from, to) in [("Ghost", "Start"), ("Start", "Ghost")] {
        assert_eq!(
            memory.call(ws, GetPath::new(from, to)).await.unwrap_err(),
            Error::node_not_found("Ghost")
        );
    }
}

pub async fn find_all_paths_lists_simple_paths_shortest_first(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["Start", "A", "B", "C", "End", "Y", "Z"]).await;
    // Start -> End directly; through A; through B against End -> B; through A then C; and
    // A <-> B, so Start > A > B > End and Start > B > A > End too. Y -> Z is apart.
    create_relations(
        &memory,
        ws,
        &[
            ("Start", "direct", "End"),
            ("Start", "sa", "A"),
            ("A", "ae", "End"),
            ("Start", "sb", "B"),
            ("End", "eb", "B"),
            ("A", "ab", "B"),
            ("A", "ac", "C"),
            ("C", "ce", "End"),
            ("Y", "yz", "Z"),
        ],
    )
    .await;
    let render = |found: &crate::AllPaths| {
        let mut text = String::new();
        for path in &found.paths {
            let hops: Vec<String> = (path.relations.iter())
                .map(|r| format!("{}-{}->{}", r.from, r.relation_type, r.to))
                .collect();
            writeln!(text, "{} | {}", path.path.join(" > "), hops.join(", ")).unwrap();
        }
        if let Some(notice) = &found.notice {
            writeln!(text, "notice: {notice}").unwrap();
        }
        text
    };
    let paths =
        async |request: crate::FindAllPaths| render(&memory.call(ws, request).await.unwrap());

    expect![[r#"
        Start > End | Start-direct->End
        Start > A > End | Start-sa->A, A-ae->End
        Start > B > End | Start-sb->B, End-eb->B
        Start > A > B > End | Start-sa->A, A-ab->B, End-eb->B
        Start > A > C > End | Start-sa->A, A-ac->C, C-ce->End
        Start > B > A > End | Start-sb->B, A-ab->B, A-ae->End
        Start > B > A > C > End | Start-sb->B, A-ab->B, A-ac->C, C-ce->End
    "#]]
    .assert_eq(&paths(crate::FindAllPaths::new("Start", "End")).await);
    expect![[r#"
        Start > End | Start-direct->End
        Start > A > End | Start-sa->A, A-ae->End
        notice: there may be more paths: ask with a higher limit (at most 100)
    "#]]
    .assert_eq(&paths(crate::FindAllPaths::new("Start", "End").limit(2)).await);
    expect![[r#"
        Start > End | Start-direct->End
        Start > A > End | Start-sa->A, A-ae->End
        Start > B > End | Start-sb->B, End-eb->B
    "#]]
    .assert_eq(&paths(crate::FindAllPaths::new("Start", "End").max_depth(2)).await);
    assert_eq!(paths(crate::FindAllPaths::new("Start", "Y")).await, "");
    assert_eq!(paths(crate::FindAllPaths::new("Z", "Z")).await, "Z | \n");
    for (from, to) in [("Ghost", "Start"), ("Start", "Ghost")] {
        let refused = memory.call(ws, crate::FindAllPaths::new(from, to)).await;
        assert_eq!(refused.unwrap_err(), Error::node_not_found("Ghost"));
    }
    for (request, field) in [
        (
            crate::FindAllPaths::new("Start", "End").max_depth(7),
            "max_depth",
        ),
        (
            crate::FindAllPaths::new("Start", "End").max_depth(0),
            "max_depth",
        ),
        (crate::FindAllPaths::new("Start", "End").limit(101), "limit"),
    ] {
        let refused = memory.call(ws, request).await.unwrap_err();
        assert!(
            matches!(&refused, Error::InvalidArgument { field: f, .. } if f == field),
            "{refused}"
        );
    }
}

pub async fn get_path_looks_at_most_twelve_hops_away(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    let names: Vec<String> = (0..=13).map(|i| format!("P{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    create_nodes(&memory, ws, &refs).await;
    let chain: Vec<(&str, &str, &str)> = refs.windows(2).map(|w| (w[0], "next", w[1])).collect();
    create_relations(&memory, ws, &chain).await;

    let twelve = memory.call(ws, GetPath::new("P0", "P12")).await.unwrap();
    assert!(twelve.found);
    assert_eq!(twelve.path, refs[..=12]);
    assert_eq!(
        twelve.relations,
        chain[..12]
            .iter()
            .map(|r| edge(r.0, r.1, r.2))
            .collect::<Vec<_>>()
    );
    assert_eq!(
        memory
            .call(ws, GetPath::new("P13", "P1"))
            .await
            .unwrap()
            .path
            .len(),
        13
    );
    assert_eq!(
        memory.call(ws, GetPath::new("P0", "P13")).await.unwrap(),
        GraphPath::default()
    );
}

pub async fn orphaned_nodes_are_those_without_relations(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    create_nodes(&memory, ws, &["A", "B", "Loop", "D"]).await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![NewNode {
                summary: Some("alone".into()),
                ..entity("E", "island", &["nobody here"])
            }]),
        )
        .await
        .unwrap();
    create_relations(&memory, ws, &[("A", "r", "B"), ("Loop", "self", "Loop")]).await;
    let brief = async |name: &str| {
        let node = open_node(&memory, ws, name).await;
        NodeBrief {
            name: node.name,
            entity_type: node.entity_type,
            summary: node.summary,
            updated_at: node.updated_at,
        }
    };

    assert_eq!(
        memory.call(ws, GetOrphanedNodes {}).await.unwrap().nodes,
        [brief("D").await, brief("E").await]
    );
    memory
        .call(ws, DeleteRelations::new(&[relation("A", "r", "B")]))
        .await
        .unwrap();
    assert_eq!(
        memory.call(ws, GetOrphanedNodes {}).await.unwrap().nodes,
        [
            brief("A").await,
            brief("B").await,
            brief("D").await,
            brief("E").await
        ]
    );
}

pub async fn unlinked_references_match_whole_names_of_unrelated_nodes(store: Arc<dyn MemoryStore>) {
    let (memory, ws) = memory_with_workspace(store, "w").await;
    memory
        .call(
            ws,
            CreateEntities::new(vec![
                entity(
                    "Alice",
                    "person",
                    &[
                        "Carol is my sister",
                        "Dave and dave and DAVE",
                        "York is new",
                    ],
                ),
                entity("Bob", "person", &["I am Bob", "carolann is nice"]),
                entity(
                    "Carol",
                    "person",
                    &["Alice knows Bob", "bob, again", "the Bobs, my_bob"],
                ),
                entity(
                    "Dave",
                    "person",
                    &[
                        "met alice in new york",
                        "ALICE again, in New York",
                        "Bobby called",
                        "writes C++ and Node.js daily",
                        "Dave talks to himself",
                    ],
                ),
                entity("New York", "place", &["home of Bob's friends"]),
                entity("C++", "language", &[]),
                entity("node.js", "tool", &[]),
            ]),
        )
        .await
        .unwrap();
    create_relations(&memory, ws, &[("Carol", "sister_of", "Alice")]).await;
    let found = async || {
        let mut found = memory
            .call(ws, FindUnlinkedReferences {})
            .await
            .unwrap()
            .references;
        found.sort();
        found
    };
    let reference = |node: &str, referenced_name: &str, reference_count| UnlinkedReference {
        node: node.into(),
        referenced_name: referenced_name.into(),
        reference_count,
    };

    // Counts are of observations, not of occurrences; "Bobby", "Bobs" and "my_bob" are not
    // Bob, "carolann" is not Carol; Carol and Alice are linked; Dave mentioning Dave does not
    // count.
    assert_eq!(
        found().await,
        [
            reference("Alice", "Dave", 1),
            reference("Carol", "Bob", 2),
            reference("Dave", "Alice", 2),
            reference("Dave", "C++", 1),
            reference("Dave", "New York", 2),
            reference("Dave", "node.js", 1),
            reference("New York", "Bob", 1),
        ]
    );

    // A relation in either direction links a pair.
    create_relations(
        &memory,
        ws,
        &[
            ("Dave", "visited", "New York"),
            ("node.js", "used_by", "Dave"),
        ],
    )
    .await;
    assert_eq!(
        found().await,
        [
            reference("Alice", "Dave", 1),
            reference("Carol", "Bob", 2),
            reference("Dave", "Alice", 2),
            reference("Dave", "C++", 1),
            reference("New York", "Bob", 1),
        ]
    );
}
