//! Command line: `serve` runs the gateway, `check-config` validates a configuration file.
//! No other logic lives here.

use clap::{Parser, Subcommand};
use elicitgate::settings::{LogFormat, Settings};
use std::path::PathBuf;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

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
}

fn init_tracing(settings: &Settings) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&settings.log.level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match settings.log.format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn load(config: &std::path::Path) -> Result<Settings, ExitCode> {
    Settings::load(config).map_err(|errors| {
        eprintln!("{errors}");
        eprintln!("{}: {} error(s)", config.display(), errors.0.len());
        ExitCode::from(1)
    })
}

async fn serve(settings: Settings) -> anyhow::Result<()> {
    let running = elicitgate::start(settings).await?;
    wait_for_signal().await;
    tracing::info!("Shutdown requested.");
    running.shutdown().await;
    Ok(())
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(error = %e, "Cannot listen for SIGTERM; stopping on Ctrl-C only.");
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::CheckConfig { config } => match load(&config) {
            Ok(settings) => {
                println!(
                    "{}: valid ({} route(s))",
                    config.display(),
                    settings.routes.len()
                );
                ExitCode::SUCCESS
            }
            Err(code) => code,
        },
        Command::Serve { config } => {
            let settings = match load(&config) {
                Ok(s) => s,
                Err(code) => return code,
            };
            init_tracing(&settings);
            let runtime = match tokio::runtime::Runtime::new() {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("error: cannot start the runtime: {e}");
                    return ExitCode::from(1);
                }
            };
            match runtime.block_on(serve(settings)) {
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
