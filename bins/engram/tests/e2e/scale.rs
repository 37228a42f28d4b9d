//! The scale benchmark's driver at a small size, so `cargo xtask bench scale` keeps working:
//! the `scale` example (built with the tests) loads, indexes and measures every call.

use serde_json::Value;

#[test]
fn the_scale_bench_runs_at_a_small_size() {
    let engram = std::path::Path::new(env!("CARGO_BIN_EXE_engram"));
    let example = engram.with_file_name("examples").join("scale");
    assert!(
        example.exists(),
        "the scale example is built with the tests"
    );
    let directory = tempfile::tempdir().unwrap();
    let database = directory.path().join("scale.db");
    let output = std::process::Command::new(example)
        .args(["--database-url", &database.display().to_string()])
        .args(["--observations", "1500", "--samples", "2", "--engram"])
        .arg(engram)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["store"], "sqlite");
    assert_eq!(report["observations"], 1500);
    assert!(report["disk_bytes"].as_u64().unwrap() > 0, "{report}");
    assert!(report["index_observations_per_second"].as_f64().unwrap() > 0.0);
    let calls = report["calls"].as_object().unwrap();
    for call in [
        "open_nodes",
        "search_nodes hybrid",
        "search_nodes embedding",
        "search_nodes text",
        "search_nodes text, one word",
        "search_observations",
        "get_neighborhood depth 2",
        "get_path",
        "read_graph first page",
        "read_graph last page",
        "get_stats",
        "find_similar_nodes",
        "get_consolidation_report",
    ] {
        assert!(
            calls[call]["p50"].as_f64().unwrap() > 0.0,
            "{call}: {report}"
        );
    }
}

#[test]
fn the_text_only_scale_bench_measures_the_calls_that_need_no_vectors() {
    let engram = std::path::Path::new(env!("CARGO_BIN_EXE_engram"));
    let example = engram.with_file_name("examples").join("scale");
    let directory = tempfile::tempdir().unwrap();
    let database = directory.path().join("scale.db");
    let output = std::process::Command::new(example)
        .args(["--database-url", &database.display().to_string()])
        .args(["--observations", "800", "--samples", "2", "--text-only"])
        .arg("--engram")
        .arg(engram)
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["text_only"], true);
    assert!(
        report.get("index_observations_per_second").is_none(),
        "{report}"
    );
    let calls = report["calls"].as_object().unwrap();
    let mut measured: Vec<&str> = calls.keys().map(String::as_str).collect();
    measured.sort_unstable();
    assert_eq!(
        measured,
        [
            "describe_node",
            "find_all_paths depth 4",
            "get_graph_vocabulary",
            "get_neighborhood depth 2",
            "get_path",
            "get_relations from a node",
            "get_stats",
            "get_subgraph 10 nodes depth 1",
            "open_nodes",
            "read_graph first page",
            "read_graph last page",
            "search_nodes text",
            "search_nodes text, one word",
            "search_observations",
        ]
    );
}
