//! End-to-end tests through real MCP clients: rmcp's client over Streamable HTTP, an rmcp
//! client over the legacy SSE transport (the client side in `sse_client`), and stdio against
//! the real `engram` binary. The server runs on `127.0.0.1:0` against a fresh store per test:
//! every test runs twice, once on a PostgreSQL database (`cargo xtask test` provides the
//! server) and once on a SQLite file (modules `postgres` and `sqlite`).

mod auth;
mod binding;
mod browser;
mod browser_views;
mod cli;
mod consolidation;
mod context;
mod contract;
mod golden;
mod hooks;
mod keywords;
mod limits;
mod oauth;
mod observability;
mod recall;
mod reference;
mod reflections;
mod scale;
mod scenario;
mod sdks;
mod server;
mod shapes;
mod sse_client;
mod stdio;
mod tcp;
mod time;
mod transfer;

/// Instantiates each `module::test(backend)` as a test per backend: `postgres::test` and
/// `sqlite::test`.
macro_rules! per_backend {
    ($($module:ident :: $test:ident),* $(,)?) => {
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::$module::$test(crate::server::Backend::Postgres).await;
                }
            )*
        }
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $test() {
                    crate::$module::$test(crate::server::Backend::Sqlite).await;
                }
            )*
        }
    };
}

per_backend!(
    sdks::the_python_sdk_reads_every_answer_at_its_defaults,
    sdks::the_typescript_sdk_reads_every_answer_at_its_defaults,
    auth::tokens_grant_one_workspace_and_read_only_tokens_only_read,
    auth::a_non_loopback_bind_requires_tokens,
    auth::failed_token_checks_are_throttled_per_address,
    auth::writes_are_recorded_with_their_token_s_label,
    oauth::oauth_access_tokens_grant_workspaces_by_scope,
    oauth::a_key_set_without_end_is_read_only_up_to_its_bound,
    browser::the_viewer_searches_opens_a_node_and_walks_to_a_neighbour,
    binding::missing_malformed_and_unknown_workspaces_are_refused_with_the_fix,
    binding::a_streamable_session_keeps_its_workspace,
    binding::foreign_hosts_and_origins_are_refused,
    binding::healthz_reports_a_ready_database,
    binding::malformed_bodies_get_json_rpc_errors,
    binding::both_framings_are_refused_on_a_raw_socket,
    binding::workspaces_stay_isolated_across_clients,
    consolidation::drafts_come_from_the_model_when_it_answers_in_time,
    context::prompts_and_resources_over_streamable_http,
    context::prompts_and_resources_over_legacy_sse,
    context::prompts_and_resources_over_stdio,
    hooks::recall_and_brief_read_a_server_or_the_database,
    hooks::claude_code_hooks_install_run_and_uninstall,
    hooks::import_refuses_or_redacts_a_secret_line_by_line,
    hooks::recall_and_brief_send_a_token_to_a_server_that_requires_one,
    consolidation::a_model_slower_than_the_budget_leaves_extractive_drafts,
    contract::every_tool_names_an_argument_of_the_wrong_type,
    contract::the_tool_list_fits_the_caller,
    contract::a_text_the_node_holds_is_skipped_and_reported,
    golden::tools_list_matches_the_golden_contract,
    observability::metrics_count_calls_sessions_and_coverage_and_logs_keep_contents_out,
    observability::metrics_show_each_token_its_own_workspace,
    observability::the_viewer_api_reads_a_workspace_behind_the_same_tokens,
    reference::the_reference_servers_calls_work_unchanged,
    reference::read_graph_walks_a_large_graph_page_by_page,
    scenario::a_paraphrase_finds_its_node_over_mcp,
    time::a_projects_months_play_out_over_streamable_http,
    time::a_time_out_of_range_or_inside_a_fact_is_named_as_an_argument,
    recall::a_multilingual_memory_answers_and_nonsense_finds_nothing,
    recall::a_small_memory_answers_by_default_in_score_order,
    keywords::a_word_in_one_fact_of_a_thousand_is_found_by_default,
    keywords::a_type_word_lifts_nothing_and_the_newer_fact_comes_first,
    scenario::every_tool_over_streamable_http,
    scenario::every_tool_over_legacy_sse,
    shapes::every_result_has_the_catalogs_keys_over_streamable_http,
    shapes::every_result_has_the_catalogs_keys_over_legacy_sse,
    sse_client::unknown_session_is_not_found,
    sse_client::a_session_keeps_its_workspace,
    sse_client::a_client_that_does_not_read_its_stream_is_dropped,
    stdio::every_tool_over_stdio,
    stdio::the_server_writes_what_reads_returned,
    tcp::every_tool_over_tcp,
    contract::the_graph_vocabulary_answers_over_streamable_http,
    reflections::reflections_are_kept_and_found_by_meaning_over_streamable_http,
    tcp::tcp_connections_are_bound_by_their_token,
    tcp::tcp_connections_are_bounded,
    transfer::the_reference_servers_file_imports_once_and_reports_what_it_refused,
    transfer::a_large_file_on_standard_input_waits_for_late_nodes,
    transfer::an_export_imports_into_an_empty_workspace_unchanged,
    transfer::an_export_keeps_ended_facts_expiries_and_aliases,
    transfer::bad_bytes_and_long_lines_never_stop_an_import,
    transfer::missing_endpoints_become_nodes_when_asked,
    transfer::a_dry_run_creates_nothing_anywhere,
    transfer::an_interrupted_import_says_where_to_resume,
);
