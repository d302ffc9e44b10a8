//! Command line: `serve` runs the gateway, `check-config` validates a configuration file.
//! No other logic lives here.

use clap::{Parser, Subcommand};
use elicitgate::settings::{LogFormat, Settings};
use std::path::PathBuf;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// jemalloc: per-thread caches suit thread-per-core workers, and large bodies are reused
/// rather than mapped per request. Against glibc malloc and mimalloc in BENCHMARKS.md.
/// The `system-allocator` feature leaves the system's malloc in place so that heap profilers
/// that intercept malloc (heaptrack, massif) see every allocation.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "elicitgate",
    version,
    about = "A reverse proxy for MCP servers that enforces policy on elicitation"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway.
    Serve {
        /// Configuration file (YAML). `ELICITGATE__…` environment variables override it.
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Validate a configuration file; print every error; exit 0 if valid, 1 if not.
    CheckConfig {
        /// Configuration file (YAML).
        #[arg(long, short)]
        config: PathBuf,
    },
    /// Judge one JSON document offline: a JSON-RPC message (request, result, error) or a bare
    /// elicitation `params` object. Prints one JSON line; exit 0 allow, 1 deny, 2 error.
    Inspect {
        /// Configuration file (YAML) with the policies.
        #[arg(long, short)]
        config: PathBuf,
        /// Judge with this route's policy (default: the shared default policy).
        #[arg(long)]
        route: Option<String>,
        /// The client's capabilities as JSON.
        #[arg(long, default_value = r#"{"elicitation":{"form":{},"url":{}}}"#)]
        capabilities: String,
        /// The document to judge; `-` or absent reads standard input.
        file: Option<PathBuf>,
    },
    /// Policy as code: run files of cases (a message, the route, the verdict and rules
    /// expected) against a configuration, judged as `inspect` judges. Exit 0 when every case
    /// passes, 1 on any mismatch, 2 when a file or the configuration cannot be read.
    Test {
        /// Configuration file (YAML) with the routes and policies.
        #[arg(long, short)]
        config: PathBuf,
        /// Case files (YAML or JSON: `cases: [{name, route?, capabilities?, message, expect}]`).
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
    /// Summarise audit events (JSON Lines): decisions by verdict, rule, route and mode, top
    /// blocking detectors, answers and time to answer. Exit 0, or 2 when the input is unreadable.
    Report {
        /// An audit file; `-` or absent reads standard input.
        file: Option<PathBuf>,
        /// Only events at or after this time: RFC 3339, or a duration back from now (`24h`).
        #[arg(long)]
        since: Option<String>,
        /// Only events at or before this time (same forms).
        #[arg(long)]
        until: Option<String>,
        /// `text` (default) or `json`.
        #[arg(long, default_value = "text")]
        format: String,
        /// Instead of a summary: one event's story, the audit event with this `event_id` (the
        /// id a block's error carries) and every event of the same request, as JSON lines.
        #[arg(long)]
        event: Option<String>,
    },
    /// Relay a local MCP server over stdio with the same enforcement: the client starts
    /// elicitgate instead of the server, e.g. `elicitgate stdio --config c.yaml -- python server.py`.
    Stdio {
        /// Configuration file (YAML) with the policies.
        #[arg(long, short)]
        config: PathBuf,
        /// Use this route's policy (default: the first route's, else the shared default).
        #[arg(long)]
        route: Option<String>,
        /// Also serve /metrics, /healthz and /readyz here (stdout carries the protocol).
        #[arg(long)]
        admin_listen: Option<std::net::SocketAddr>,
        /// The server command and its arguments, after `--`.
        #[arg(required = true, last = true)]
        command: Vec<String>,
    },
    /// Run the gateway on loopback in front of a built-in MCP server and show five decisions.
    Demo {
        /// Leave the gateway and demo server running afterwards for a manual client.
        #[arg(long)]
        keep_running: bool,
    },
}

/// Logs to stderr in the configured format. Returns what sets the filter on reload
/// (`log.level`; refused while `RUST_LOG` decides it).
fn init_tracing(settings: &Settings) -> Option<elicitgate::live::SetLogLevel> {
    use tracing_subscriber::prelude::*;
    let from_env = EnvFilter::try_from_default_env().ok();
    let env_decides = from_env.is_some();
    // With `log.access`, access lines are written whatever `log.level` says.
    let access = settings.log.access;
    let directives = move |level: &str| {
        if access {
            format!("{level},elicitgate::access=info")
        } else {
            level.to_owned()
        }
    };
    let filter = from_env.unwrap_or_else(|| EnvFilter::new(directives(&settings.log.level)));
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    // Colour codes only for a terminal: a file, a pipe or a container log gets plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let output = tracing_subscriber::fmt::layer()
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    let output = match settings.log.format {
        LogFormat::Text => output.boxed(),
        LogFormat::Json => output.json().boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(output)
        .init();
    Some(Box::new(move |level: &str| {
        if env_decides {
            return Err("RUST_LOG is set and decides the log filter".into());
        }
        let filter = directives(level)
            .parse::<EnvFilter>()
            .map_err(|e| format!("log.level: {e}"))?;
        handle.reload(filter).map_err(|e| e.to_string())
    }))
}

fn load(config: &std::path::Path) -> Result<Settings, ExitCode> {
    Settings::load(config).map_err(|errors| {
        eprintln!("{errors}");
        eprintln!("{}: {} error(s)", config.display(), errors.0.len());
        ExitCode::from(1)
    })
}

async fn serve(
    settings: Settings,
    config: PathBuf,
    log_level: Option<elicitgate::live::SetLogLevel>,
) -> anyhow::Result<()> {
    anyhow::ensure!(
        !settings.routes.is_empty(),
        "{}: `serve` needs at least one route",
        config.display()
    );
    let options = elicitgate::start::Options {
        config_path: Some(config),
        audit_sink: None,
        log_level,
    };
    let (terms, languages, took) = elicitgate_core::lexicon::SecretLexicon::builtin_report();
    tracing::info!(
        terms,
        languages,
        build_ms = elicitgate::spans::millis(took),
        "Secret lexicon loaded."
    );
    let running = elicitgate::start::start_with(settings, options).await?;
    elicitgate::shutdown::wait_for_signal().await;
    tracing::info!("Shutdown requested.");
    running.shutdown().await;
    Ok(())
}

/// `inspect`: exit 0 allow, 1 deny, 2 usage or parse error (with `{"error":…}`).
fn inspect(
    config: &std::path::Path,
    route: Option<&str>,
    capabilities: &str,
    file: Option<&std::path::Path>,
) -> ExitCode {
    let fail = |message: String| {
        println!("{}", serde_json::json!({ "error": message }));
        ExitCode::from(2)
    };
    let settings = match Settings::load(config) {
        Ok(s) => s,
        Err(errors) => return fail(errors.to_string()),
    };
    let policy = match route {
        Some(name) if !settings.routes.iter().any(|r| r.name == name) => {
            return fail(format!("no route named `{name}`"))
        }
        Some(name) => settings.policies.for_route(name),
        None => settings.policies.default_policy(),
    };
    let input = match file {
        Some(path) if path.as_os_str() != "-" => std::fs::read(path),
        _ => {
            let mut buf = Vec::new();
            std::io::Read::read_to_end(&mut std::io::stdin(), &mut buf).map(|_| buf)
        }
    };
    let input = match input {
        Ok(bytes) => bytes,
        Err(e) => return fail(format!("cannot read the input: {e}")),
    };
    let (code, line) = elicitgate::inspect_cli::run(&policy, Some(capabilities), &input);
    println!("{line}");
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}

/// `test`: every case of every file; exit 0 all passed, 1 a mismatch, 2 unreadable input.
fn policy_test(config: &std::path::Path, files: &[PathBuf]) -> ExitCode {
    use elicitgate::policy_test::{judge, parse, report, Outcome};
    let settings = match Settings::load(config) {
        Ok(s) => s,
        Err(errors) => {
            eprintln!("{}: {errors}", config.display());
            return ExitCode::from(2);
        }
    };
    let routes: Vec<&str> = settings.routes.iter().map(|r| r.name.as_str()).collect();
    let (mut passed, mut failed, mut broken) = (0, 0, 0);
    for file in files {
        let name = file.display().to_string();
        let cases = match std::fs::read_to_string(file)
            .map_err(|e| e.to_string())
            .and_then(|t| parse(&t))
        {
            Ok(cases) => cases,
            Err(e) => {
                eprintln!("{name}: {e}");
                broken += 1;
                continue;
            }
        };
        for (i, case) in cases.iter().enumerate() {
            let outcome = judge(&settings.policies, &routes, case);
            print!("{}", report(&name, i, case, &outcome));
            match outcome {
                Outcome::Passed => passed += 1,
                Outcome::Failed { .. } => failed += 1,
                Outcome::Error(_) => broken += 1,
            }
        }
    }
    println!(
        "{} cases: {passed} passed, {failed} failed, {broken} not judged",
        passed + failed + broken
    );
    if broken > 0 {
        ExitCode::from(2)
    } else if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// `report --event ID`: exit 0 with the story, 1 when no event has that id, 2 unreadable.
fn report_story(file: Option<&std::path::Path>, event: &str) -> ExitCode {
    let story = match file.filter(|f| f.as_os_str() != "-") {
        Some(path) => std::fs::File::open(path)
            .and_then(|f| elicitgate::report::story(std::io::BufReader::new(f), event)),
        None => elicitgate::report::story(std::io::stdin().lock(), event),
    };
    match story {
        Ok(lines) if lines.is_empty() => {
            eprintln!("report: no audit event {event}");
            ExitCode::from(1)
        }
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("report: {e}");
            ExitCode::from(2)
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Runtime::new().map_err(|e| {
        eprintln!("error: cannot start the runtime: {e}");
        ExitCode::from(1)
    })
}

fn report(
    file: Option<&std::path::Path>,
    since: Option<&str>,
    until: Option<&str>,
    format: &str,
) -> ExitCode {
    use elicitgate::report::{Summary, Window};
    let window = match Window::parse(since, until, std::time::SystemTime::now()) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("report: {e}");
            return ExitCode::from(2);
        }
    };
    let summary = match file.filter(|f| f.as_os_str() != "-") {
        Some(path) => std::fs::File::open(path)
            .and_then(|f| Summary::read(std::io::BufReader::new(f), window)),
        None => Summary::read(std::io::stdin().lock(), window),
    };
    match (summary, format) {
        (Ok(s), "json") => match serde_json::to_string_pretty(&s) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("report: {e}");
                ExitCode::from(2)
            }
        },
        (Ok(s), "text") => {
            print!("{}", s.render_text());
            ExitCode::SUCCESS
        }
        (Ok(_), other) => {
            eprintln!("report: unknown --format `{other}` (text or json)");
            ExitCode::from(2)
        }
        (Err(e), _) => {
            eprintln!("report: {e}");
            ExitCode::from(2)
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::CheckConfig { config } => match load(&config) {
            Ok(settings) => {
                for warning in &settings.warnings {
                    println!("warning: {warning}");
                }
                println!(
                    "{}: valid ({} route(s))",
                    config.display(),
                    settings.routes.len()
                );
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Inspect {
            config,
            route,
            capabilities,
            file,
        } => inspect(&config, route.as_deref(), &capabilities, file.as_deref()),
        Command::Report {
            file,
            event: Some(event),
            ..
        } => report_story(file.as_deref(), &event),
        Command::Report {
            file,
            since,
            until,
            format,
            event: None,
        } => report(file.as_deref(), since.as_deref(), until.as_deref(), &format),
        Command::Test { config, files } => policy_test(&config, &files),
        Command::Stdio {
            config,
            route,
            admin_listen,
            command,
        } => {
            let settings = match load(&config) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let _ = init_tracing(&settings);
            let runtime = match runtime() {
                Ok(rt) => rt,
                Err(code) => return code,
            };
            let run = elicitgate::stdio::run(settings, route, command, admin_listen);
            let code = match runtime.block_on(run) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    1
                }
            };
            // Reading our stdin occupies a blocking thread that a runtime shutdown would wait
            // for; everything is flushed by now, so leave at once.
            runtime.shutdown_background();
            std::process::exit(code)
        }
        Command::Demo { keep_running } => {
            let runtime = match runtime() {
                Ok(rt) => rt,
                Err(code) => return code,
            };
            match runtime.block_on(elicitgate::demo::run(keep_running)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Serve { config } => {
            let settings = match load(&config) {
                Ok(s) => s,
                Err(code) => return code,
            };
            let log_level = init_tracing(&settings);
            let runtime = match runtime() {
                Ok(rt) => rt,
                Err(code) => return code,
            };
            match runtime.block_on(serve(settings, config, log_level)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    tracing::error!(error = format!("{e:#}"), "Gateway failed.");
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
    }
}
