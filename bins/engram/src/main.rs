//! The `engram` command: serve MCP, migrate the database, manage workspaces.

/// `println!` for a command's output: a reader that went away (`engram report demo | head`)
/// ends the command quietly with status 0, as `cat` does, told by the write's error kind
/// (Rust ignores SIGPIPE, and `println!` would panic).
macro_rules! outln {
    () => {
        $crate::write_out(format_args!("\n"))
    };
    ($($arg:tt)*) => {
        $crate::write_out(format_args!("{}\n", format_args!($($arg)*)))
    };
}

/// `print!` as [`outln!`] does it.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::write_out(format_args!($($arg)*))
    };
}

mod cli;
mod export;
mod hooks;
mod import;
mod recall;
mod reindex;
mod report;
mod tokens;
mod workspaces;

use std::io::IsTerminal;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser};

use cli::{Cli, Command, PerspectiveCommand, ServeArgs, WorkspaceCommand};
use engram::backend::{Location, Store};
use engram::http::Guard;
use engram_domain::{Memory, MemoryStore, SecretPolicy};
use tokio_util::sync::CancellationToken;

fn main() -> std::process::ExitCode {
    // HTTPS (`recall --url https://…`, the model fetch's clients aside) uses rustls with ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    fix_model_threads();
    limit_malloc_arenas();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Claude Code blocks the user's prompt when a hook exits with status 2, clap's status
        // for a bad argument (one read from the environment included): a hook says why and
        // lets the prompt go on.
        Err(error) if is_hook() && error.use_stderr() => {
            eprintln!("engram: memory left out of this prompt: {error}");
            return std::process::ExitCode::SUCCESS;
        }
        Err(error) => error.exit(),
    };
    // `recall` and `brief` answer within `--timeout`, opening the store included.
    let (limit, hook) = match &cli.command {
        Command::Recall(cli::RecallArgs { run, .. })
        | Command::Brief(cli::BriefArgs { run, .. }) => (Some(run.timeout), run.hook),
        _ => (None, false),
    };
    // A client command says what went wrong in one line of its own: no progress of the
    // model it loads, no MCP client's internals.
    let default_filter = match limit {
        Some(_) => "warn,rmcp=off",
        None => "info,rmcp=warn",
    };
    init_tracing(cli.log_format, default_filter);
    let outcome = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
        .and_then(|runtime| {
            let outcome = match limit {
                None => runtime.block_on(run(cli)),
                Some(limit) => runtime.block_on(async {
                    (tokio::time::timeout(limit, run(cli)).await).unwrap_or_else(|_| {
                        Err(anyhow::anyhow!(
                            "no answer within {} (--timeout)",
                            humantime::format_duration(limit)
                        ))
                    })
                }),
            };
            // A hook ends when its answer is printed: work still running on blocking threads
            // (a model being fetched, a statement waiting on a lock) is abandoned, not waited
            // for, so the client's time limit is never reached.
            if hook {
                runtime.shutdown_background();
            }
            outcome
        });
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // A hook never fails its client (Claude Code shows failures to the user, and blocks
        // the prompt on status 2): it says why on stderr and the prompt goes on.
        Err(error) if hook => {
            eprintln!("engram: memory left out of this prompt: {error:#}");
            std::process::ExitCode::SUCCESS
        }
        // `engram export | head`: the reader has what it wanted.
        Err(error) if is_closed_pipe(&error) => std::process::ExitCode::SUCCESS,
        Err(error) if error.is::<import::Interrupted>() => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::from(import::INTERRUPTED_STATUS)
        }
        Err(error) => {
            eprintln!("error: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Whether engram runs as a client's hook (`recall --hook`, `brief --hook`), read from the raw
/// arguments so that it is known even when they do not parse.
fn is_hook() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|arg| arg == "--hook")
        && args.iter().any(|arg| arg == "recall" || arg == "brief")
}

/// Whether `error` comes from writing to a pipe whose reader is gone.
fn is_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Writes a command's output to standard output ([`outln!`]); a closed pipe ends the process
/// with status 0, any other failure to write is a bug worth its panic.
///
/// Stored text reaches a terminal (or a hook's client) only as characters: every control
/// character but newline and tab is written as its escape (`\u{1b}`), so an observation
/// holding a terminal escape sequence cannot retitle, clear or rewrite the user's terminal.
fn write_out(output: std::fmt::Arguments<'_>) {
    use std::io::Write;
    let text = output.to_string();
    let shown = printable(&text);
    if let Err(error) = std::io::stdout().lock().write_all(shown.as_bytes()) {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        panic!("writing to standard output: {error}");
    }
}

/// `text` with every control character but newline and tab escaped (`\u{1b}`), and every
/// bidirectional formatting character (which reorders what a terminal shows: U+202E turns
/// "txt.exe" into "exe.txt") escaped as JSON writes it (`\u202e`), so JSON output stays JSON.
fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let control = |c: char| c.is_control() && c != '\n' && c != '\t';
    let bidi = |c: char| matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    if !text.chars().any(|c| control(c) || bidi(c)) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if control(c) {
            shown.extend(c.escape_default());
        } else if bidi(c) {
            shown.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    std::borrow::Cow::Owned(shown)
}

/// Sets `RAYON_NUM_THREADS`, when unset, to the thread count the local model would choose
/// ([`engram_embed::local::model_threads`]), so that it stops reading `/proc/cpuinfo` on every
/// matrix product.
#[allow(unsafe_code)]
fn fix_model_threads() {
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        let threads = engram_embed::local::model_threads();
        // SAFETY: the first thing `main` does: no other thread exists yet (the runtime starts
        // after), so nothing can read the environment while it changes.
        unsafe { std::env::set_var("RAYON_NUM_THREADS", threads.to_string()) };
    }
}

/// glibc gives each thread that allocates while others do its own arena, up to eight per core,
/// and keeps what is freed in each: under the local model's load (indexing, then similar-node
/// searches and consolidation reports over 10,000 nodes) the heap reached 477 MB, and 278 MB
/// with one arena per core, at the same speed (BENCHMARKS.md). So one per core, unless
/// `MALLOC_ARENA_MAX` says otherwise.
#[allow(unsafe_code)]
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: `mallopt` only sets a parameter of glibc's allocator; called before any other
        // thread starts, so no allocation is in flight on another thread.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, arenas) };
    }
}

/// Libraries whose debug and trace events carry what passes through them (MCP messages with
/// observation texts, SQL parameters, HTTP headers with tokens): capped at `info` whatever
/// `ENGRAM_LOG` asks, so no level of logging writes memory contents or secrets.
const CONTENT_CARRYING_TARGETS: [&str; 7] = [
    "rmcp",
    "tokio_postgres",
    "postgres_protocol",
    "hyper",
    "h2",
    "reqwest",
    "ollama_rs",
];

/// Logs go to stderr (stdout is the protocol under `--stdio`); `ENGRAM_LOG` (else
/// `RUST_LOG`) filters them, except that [`CONTENT_CARRYING_TARGETS`] never log below `info`.
/// Colour only on a terminal and without `NO_COLOR` (no-color.org): clients such as Claude
/// Desktop keep the server's stderr in a log file.
fn init_tracing(format: cli::LogFormat, default_filter: &str) {
    use tracing_subscriber::Layer;
    use tracing_subscriber::filter::FilterExt;
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;

    let filter = tracing_subscriber::EnvFilter::try_from_env("ENGRAM_LOG")
        .or_else(|_| tracing_subscriber::EnvFilter::try_from_env("RUST_LOG"))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let cap = tracing_subscriber::filter::filter_fn(|metadata| {
        *metadata.level() <= tracing::Level::INFO
            || !(CONTENT_CARRYING_TARGETS.iter())
                .any(|target| metadata.target().split("::").next() == Some(*target))
    });
    let filter = filter.and(cap);
    let layer = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry();
    match format {
        cli::LogFormat::Json => {
            let layer = layer.json().with_current_span(true).with_filter(filter);
            registry.with(layer).init();
        }
        cli::LogFormat::Pretty => {
            let colour = std::io::stderr().is_terminal()
                && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
            registry
                .with(layer.with_ansi(colour).with_filter(filter))
                .init();
        }
    }
}

/// Whether `command` only reads: it never creates a database nor changes a schema.
fn reads_only(command: &Command) -> bool {
    matches!(
        command,
        Command::Report(_)
            | Command::Recall(_)
            | Command::Brief(_)
            | Command::Export(_)
            | Command::Import(cli::ImportArgs { dry_run: true, .. })
            | Command::Token(cli::TokenCommand::List { .. })
            | Command::Workspace(
                WorkspaceCommand::List { .. }
                    | WorkspaceCommand::Perspectives(PerspectiveCommand::List { .. })
            )
    )
}

async fn run(cli: Cli) -> Result<()> {
    let location = || Location::parse(cli.database_url.as_deref());
    let secrets = cli.secrets;
    let routes = engram_pg::PgOptions {
        direct_url: cli.database_direct_url.clone(),
        read_replica_url: cli.read_replica_url.clone(),
        replica_max_lag: cli.read_replica_max_lag,
        ..engram_pg::PgOptions::default()
    };
    match cli.command {
        Command::Hooks(cli::HooksCommand::ClaudeCode(args)) => {
            hooks::run(&args, cli.database_url.as_deref())
        }
        Command::Recall(args) if args.run.server.url.is_some() => {
            let server = args.run.server.clone();
            recall::recall(recall::Source::Server(server), args).await
        }
        Command::Brief(args) if args.run.server.url.is_some() => {
            let server = args.run.server.clone();
            recall::brief(recall::Source::Server(server), args).await
        }
        Command::Completions { shell } => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "engram", &mut std::io::stdout());
            Ok(())
        }
        // The `help` subcommand has no page of its own: the pages leave it out.
        Command::Man { dir: None } => {
            let command = Cli::command().disable_help_subcommand(true);
            Ok(clap_mangen::Man::new(command).render(&mut std::io::stdout())?)
        }
        Command::Man { dir: Some(dir) } => {
            std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
            let command = Cli::command().disable_help_subcommand(true);
            clap_mangen::generate_to(command, &dir)
                .with_context(|| format!("writing the manual pages to {}", dir.display()))?;
            outln!("wrote the manual pages to {}", dir.display());
            Ok(())
        }
        Command::FetchModel { model } => {
            use engram_embed::LocalModel;
            let models = match model.as_str() {
                "all" => LocalModel::ALL.to_vec(),
                name => vec![name.parse::<LocalModel>().map_err(anyhow::Error::msg)?],
            };
            for model in models {
                let dir = tokio::task::spawn_blocking(move || {
                    engram_embed::local::ensure_model_files(model)
                })
                .await??;
                outln!("{} is in {}", model.display_name(), dir.display());
            }
            Ok(())
        }
        Command::Serve(args) => {
            let location = location()?;
            // Bind first: a port in use is reported before any other work is done.
            let listener = match args.stdio {
                true => None,
                false => Some(match tokio::net::TcpListener::bind(args.bind).await {
                    Ok(listener) => listener,
                    Err(error) => return Err(bind_failure(args.bind, error).await),
                }),
            };
            let tcp = match args.tcp {
                Some(address) => Some(match tokio::net::TcpListener::bind(address).await {
                    Ok(listener) => listener,
                    Err(error) => return Err(bind_failure(address, error).await),
                }),
                None => None,
            };
            let store = Store::open_routed(&location, args.call_timeout, &routes).await?;
            serve(store, &location, *args, (listener, tcp), secrets).await
        }
        Command::Backup { path } => backup(&location()?, &path).await,
        Command::Restore { path } => restore(&location()?, &path).await,
        command => with_store(&location()?, &routes, command, secrets).await,
    }
}

/// `engram backup PATH`: the SQLite file copied while it serves.
async fn backup(location: &Location, to: &std::path::Path) -> Result<()> {
    let Location::Sqlite(database) = location else {
        anyhow::bail!(
            "engram backup copies a SQLite file; back PostgreSQL up with `pg_dump \
             --format=custom --file=engram.dump DATABASE` (README, \"Backups\")"
        );
    };
    if !database.exists() {
        anyhow::bail!(
            "no engram database at {}: nothing to back up",
            database.display()
        );
    }
    let (from, path) = (database.clone(), to.to_owned());
    let copied =
        tokio::task::spawn_blocking(move || engram_sqlite::backup::backup(&from, &path)).await??;
    outln!(
        "backed up {} to {} ({:.1} MB)",
        database.display(),
        to.display(),
        copied.bytes as f64 / 1e6
    );
    Ok(())
}

/// `engram restore PATH`: a backup copied into an empty SQLite store, then migrated.
async fn restore(location: &Location, from: &std::path::Path) -> Result<()> {
    let Location::Sqlite(database) = location else {
        anyhow::bail!(
            "engram restore fills a SQLite file; restore PostgreSQL with `pg_restore \
             --dbname=DATABASE engram.dump` (README, \"Backups\")"
        );
    };
    if !from.exists() {
        anyhow::bail!("no backup at {}", from.display());
    }
    // A server on the file holds this lock: it would keep writing (and caching) what the
    // restore replaces.
    let _serving = match serving_lock(database) {
        Some(file) if file.try_lock().is_err() => anyhow::bail!(
            "an engram server is serving {}: stop it before restoring into it",
            database.display()
        ),
        held => held,
    };
    let (backup, path) = (from.to_owned(), database.clone());
    let copied =
        tokio::task::spawn_blocking(move || engram_sqlite::backup::restore(&backup, &path))
            .await??;
    let store = Store::open(location, engram_domain::limits::CALL_TIMEOUT).await?;
    for migration in store.migrate().await? {
        outln!("applied {migration}");
    }
    outln!(
        "restored {} into {} ({:.1} MB)",
        from.display(),
        database.display(),
        copied.bytes as f64 / 1e6
    );
    Ok(())
}

/// Why `serve` cannot listen on `address`: for a port in use, whether an engram server
/// answers there already (its `/healthz`, asked with a one-second limit) and how to choose
/// another port.
async fn bind_failure(address: std::net::SocketAddr, error: std::io::Error) -> anyhow::Error {
    if error.kind() != std::io::ErrorKind::AddrInUse {
        return anyhow::Error::new(error).context(format!("binding {address}"));
    }
    let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(1));
    let engram_answers = match client.build() {
        Ok(client) => {
            (client.get(format!("http://{address}/healthz")).send().await).is_ok_and(|response| {
                response.status().is_success()
                    || response.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE
            })
        }
        Err(_) => false,
    };
    let who = if engram_answers {
        format!("an engram server already answers at http://{address} (its /healthz responds)")
    } else {
        format!("another program uses {address}")
    };
    anyhow::anyhow!(
        "binding {address}: {error}: {who}; choose another port with --bind 127.0.0.1:PORT \
         (or ENGRAM_BIND)"
    )
}

/// The commands that work on the store. Those that only read never create a database nor
/// change a schema (they say what to run instead); the others bring the schema up to date
/// first.
async fn with_store(
    location: &Location,
    routes: &engram_pg::PgOptions,
    command: Command,
    secrets: SecretPolicy,
) -> Result<()> {
    let reads_only = reads_only(&command);
    let no_file = matches!(location, Location::Sqlite(path) if !path.exists());
    let command = match command {
        // A dry run creates nothing, the database file included: check against nothing.
        Command::Import(args) if args.dry_run && no_file => {
            return import::run(None, args, secrets).await;
        }
        command => command,
    };
    if reads_only
        && no_file
        && let Location::Sqlite(path) = location
    {
        anyhow::bail!(
            "no engram database at {}: nothing to read yet (`engram workspace create NAME` or \
             `engram serve` creates it)",
            path.display()
        );
    }
    let mut store =
        Store::open_routed(location, engram_domain::limits::CALL_TIMEOUT, routes).await?;
    if reads_only {
        store = store.reading_only();
    }
    let applied = if reads_only {
        ensure_migrated(&store).await?;
        Vec::new()
    } else {
        store.migrate().await?
    };
    if let Command::Migrate = command {
        if applied.is_empty() {
            outln!("database schema is up to date");
        }
        for migration in applied {
            outln!("applied {migration}");
        }
        return Ok(());
    }
    for migration in applied {
        tracing::info!(%migration, "applied migration");
    }
    match command {
        Command::Reindex { workspace, embed } => {
            reindex::run(store.shared(), workspace.name(), &embed.choice()).await
        }
        Command::Report(args) => report::run(store.shared(), args).await,
        Command::Token(command) => tokens::run(&Memory::new(store.shared()), command).await,
        Command::Import(args) => {
            // Each line is screened by `secrets` as it is read (a secret refuses its line, not
            // its batch), so the batches are not screened a second time.
            let memory = Memory::new(store.shared()).with_secret_policy(SecretPolicy::Allow);
            import::run(Some(&memory), args, secrets).await
        }
        Command::Recall(args) => recall::recall(recall::Source::Store(store.shared()), args).await,
        Command::Brief(args) => recall::brief(recall::Source::Store(store.shared()), args).await,
        Command::Export(args) => {
            let memory = Memory::new(store.shared());
            match &args.output {
                Some(path) => {
                    let file = std::fs::File::create(path)
                        .with_context(|| format!("creating {}", path.display()))?;
                    export::run(&memory, &args, &mut std::io::BufWriter::new(file)).await
                }
                None => {
                    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
                    export::run(&memory, &args, &mut out).await
                }
            }
        }
        Command::Workspace(command) => workspaces::run(&Memory::new(store.shared()), command).await,
        Command::Migrate
        | Command::Serve(_)
        | Command::Backup { .. }
        | Command::Restore { .. }
        | Command::FetchModel { .. }
        | Command::Hooks(_)
        | Command::Completions { .. }
        | Command::Man { .. } => unreachable!("handled by run"),
    }
}

async fn ensure_migrated(store: &Store) -> Result<()> {
    anyhow::ensure!(
        store.is_migrated().await?,
        "the database schema is not current: run `engram migrate` first"
    );
    Ok(())
}

/// Serves over stdio, or over HTTP on `listener` and, with `--tcp`, over TCP on `tcp` (both
/// bound before the store was opened).
async fn serve(
    store: Store,
    location: &Location,
    args: ServeArgs,
    (listener, tcp): (
        Option<tokio::net::TcpListener>,
        Option<tokio::net::TcpListener>,
    ),
    secrets: SecretPolicy,
) -> Result<()> {
    if args.no_migrate {
        ensure_migrated(&store).await?;
    } else {
        for migration in store.migrate().await? {
            tracing::info!(%migration, "applied migration");
        }
    }
    let kind = store.kind();
    let _serving = announce_shared_file(location);
    let pool: engram::http::metrics::PoolProbe = match &store {
        Store::Postgres(pg) => {
            let pg = pg.clone();
            Arc::new(move || Some((pg.pool_status(), pg.replica_status())))
        }
        Store::Sqlite(_) => Arc::new(|| None),
    };
    let store: Arc<dyn MemoryStore> = store.shared();
    let shutdown = CancellationToken::new();
    let mut memory = Memory::new(store.clone()).with_secret_policy(secrets);
    let embedder = args.embed.choice().build()?;
    if let Some(embedder) = &embedder {
        let indexer = engram::indexing::indexer(store.clone(), embedder.clone());
        memory = memory
            .with_embedder(embedder.clone())
            .with_indexer(indexer.clone());
        tokio::spawn(engram::indexing::run_indexer(
            indexer,
            store.clone(),
            shutdown.clone(),
        ));
    }
    if let Some((generator, budget)) = args.generate.build(&args.embed.ollama_host)? {
        memory = memory.with_generator(generator, budget);
    }
    tokio::spawn(engram::indexing::purge_expired(
        memory.clone(),
        shutdown.clone(),
    ));
    // Reads and searches note what they returned; written every few seconds, off the request
    // path, and once more when the server stops.
    let access = engram_domain::AccessLog::default();
    if !args.no_access_tracking {
        memory = memory.with_access_log(access.clone());
    }
    if args.access_ranking {
        memory = memory.with_access_ranking(engram_domain::AccessRanking::default());
    }
    let recording = tokio::spawn(engram::indexing::record_access(
        memory.clone(),
        access,
        shutdown.clone(),
    ));
    tracing::info!(
        store = %location,
        embedder = memory.embedder().map_or("none", |e| e.model_id()),
        generator = memory
            .generator()
            .map_or("none (extractive drafts)", |g| g.model_id()),
        "engram starting"
    );
    if let Some(name) = &args.create_workspace {
        match memory.create_workspace(name).await {
            Ok(_) => tracing::info!(workspace = %name, "created workspace"),
            Err(engram_domain::Error::AlreadyExists { .. }) => {}
            Err(error) => return Err(error).context("--create-workspace"),
        }
    }
    if args.stdio {
        let name = args.workspace.context("--stdio needs --workspace NAME")?;
        let workspace = memory.workspace(&name).await.with_context(|| {
            format!("workspace {name:?}: create it with `engram workspace create {name}`")
        })?;
        tracing::info!(workspace = %workspace.name, "serving MCP over stdio");
        let served = engram::serve_stdio(memory, workspace, &args.tools).await;
        shutdown.cancel();
        let _ = recording.await;
        return served;
    }
    let listener = listener.context("no listener for HTTP")?;
    let address = listener.local_addr()?;
    let loopback = address.ip().is_loopback();
    let require_auth = !args.insecure_no_auth && (args.require_auth || !loopback);
    if !require_auth && !loopback {
        tracing::warn!(
            "serving {address} without tokens (--insecure-no-auth): anyone who reaches it reads \
             and writes every workspace"
        );
    }
    if require_auth && args.oauth_issuer.is_none() && memory.tokens(None).await?.is_empty() {
        tracing::warn!(
            "tokens are required but none exist yet: every request is refused until one is made \
             with `engram token create --workspace NAME`"
        );
    }
    if let Some(metrics_bind) = args.metrics_bind {
        let handle = engram::http::metrics::install()?;
        let metrics_listener = tokio::net::TcpListener::bind(metrics_bind)
            .await
            .with_context(|| format!("binding --metrics-bind {metrics_bind}"))?;
        let app = engram::http::metrics::router(
            handle,
            memory.clone(),
            pool,
            require_auth,
            args.metrics_token.clone(),
        );
        tracing::info!(
            "metrics at http://{}/metrics",
            metrics_listener.local_addr()?
        );
        let stop = shutdown.clone();
        tokio::spawn(async move {
            let served = axum::serve(metrics_listener, app)
                .with_graceful_shutdown(stop.cancelled_owned())
                .await;
            if let Err(error) = served {
                tracing::error!(%error, "the metrics listener stopped");
            }
        });
    }
    if let Some(tcp) = tcp {
        let tcp_address = tcp.local_addr()?;
        let serving = engram::tcp::TcpServing {
            memory: memory.clone(),
            tools: args.tools.clone(),
            // As HTTP's: off loopback or asked for, and whenever OAuth is configured.
            require_auth: (!args.insecure_no_auth
                && (args.require_auth || !tcp_address.ip().is_loopback()))
                || args.oauth_issuer.is_some(),
            workspace: args.workspace.clone(),
            max_line_bytes: args.max_body_bytes,
            patience: args.body_read_timeout,
            idle: args.session_idle,
        };
        tracing::info!(
            tokens = if serving.require_auth {
                "required"
            } else {
                "not required"
            },
            "MCP as newline-delimited JSON-RPC on tcp://{tcp_address}"
        );
        tokio::spawn(engram::tcp::serve(tcp, serving, shutdown.clone()));
    }
    // Said only once every listener is bound: a port in use stops the server before.
    tracing::info!(
        store = kind,
        tokens = if require_auth {
            "required"
        } else {
            "not required"
        },
        "engram listening on http://{address} (Streamable HTTP at /mcp, legacy SSE at /sse, the \
         viewer at /ui, health at /healthz)"
    );
    let guard = Guard {
        allowed_hosts: args.allowed_hosts,
        allowed_origins: args.allowed_origins,
        require_auth,
        max_body_bytes: args.max_body_bytes,
        body_read_timeout: args.body_read_timeout,
        tools: args.tools,
        unread: engram::http::UnreadBudget {
            per_session: args.max_unread_bytes_per_session,
            total: args.max_unread_bytes,
        },
        max_connections_per_address: args.max_connections_per_address,
        trusted_proxies: args.trusted_proxies,
        drain: args.drain,
        oauth: match (args.oauth_issuer, args.oauth_jwks_url, args.resource_url) {
            (Some(issuer), Some(jwks_url), Some(resource)) => {
                Some(engram::http::oauth::OAuthConfig {
                    issuer,
                    jwks_url,
                    resource,
                })
            }
            _ => None,
        },
        sessions: engram::http::SessionLimits {
            max_sessions: args.max_sessions,
            max_sessions_per_address: args.max_sessions_per_address,
            idle: args.session_idle,
        },
    };
    let stop = shutdown.clone();
    tokio::spawn(async move {
        shutdown_signal().await;
        stop.cancel();
    });
    let served =
        engram::http::serve(memory, guard, listener, shutdown.clone().cancelled_owned()).await;
    shutdown.cancel();
    let _ = recording.await;
    served?;
    tracing::info!("engram stopped");
    Ok(())
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    stop_signal().await;
    tracing::info!("shutting down: finishing in-flight requests");
}

/// Completes on the next SIGINT (Ctrl-C) or SIGTERM.
pub(crate) async fn stop_signal() {
    let interrupt = tokio::signal::ctrl_c();
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("installing the SIGTERM handler");
    tokio::select! {
        _ = interrupt => {}
        _ = terminate.recv() => {}
    }
}

/// `<file>.serving`, opened (made when missing): a server holds a lock on it while it runs.
fn serving_lock(path: &std::path::Path) -> Option<std::fs::File> {
    let mut marker = path.to_owned().into_os_string();
    marker.push(".serving");
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&marker)
        .ok()
}

/// For a SQLite file, holds a lock on `<file>.serving` while the server runs, and says so
/// when another server holds it already: both then serve the same memory (each sees the
/// other's writes), which is allowed but should be known. `None` for PostgreSQL.
fn announce_shared_file(location: &Location) -> Option<std::fs::File> {
    let Location::Sqlite(path) = location else {
        return None;
    };
    let file = serving_lock(path)?;
    if let Err(std::fs::TryLockError::WouldBlock) = file.try_lock() {
        tracing::warn!(
            file = %path.display(),
            "another engram server is serving this SQLite file: both serve the same memory \
             and each sees the other's writes"
        );
    }
    Some(file)
}
