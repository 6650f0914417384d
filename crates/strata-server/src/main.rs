//! `strata-server [config-file] [--option value ...]`: parses the
//! configuration, sets up logging and runs the server until SIGINT/SIGTERM.

use strata_server::base::alloc::CountingAlloc;
use strata_server::command::LogReloader;
use strata_server::services::config::{self, Config, LogLevel};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// jemalloc's settings (read at its start):
/// - freed pages go back to the OS within about a second, by one
///   background purging thread (issue #12: RSS tracks `used_memory` after
///   values leave RAM);
/// - value-sized classes (128 B to 4 KiB) take 64 KiB slabs, where
///   jemalloc's default is the smallest exact fit (a 512-byte class: one
///   4 KiB page, 8 regions). Demotion frees values all over their slabs;
///   with 8 regions each, refilling a thread's cache took a slab from the
///   arena's heap for every one or two regions (`edata_heap_remove_first`,
///   5% of the server under SETs that demote). With 128, the same refill
///   takes a slab or two (BENCHMARKS.md, issue 12, ninth session).
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 91] =
    b"background_thread:true,max_background_threads:1,dirty_decay_ms:1000,slab_sizes:128-4096:16\0";

fn main() {
    CountingAlloc::mark_installed();
    // The command registry first: the configuration's `user` lines name
    // commands.
    strata_server::commands::install();
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        print!("{}", config::help_text());
        return;
    }
    if args.iter().any(|a| a == "--version" || a == "-v") {
        println!("strata-server {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let config_file = args
        .first()
        .filter(|a| !a.starts_with("--"))
        .map(std::path::PathBuf::from);
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("strata-server: {e}");
            std::process::exit(1);
        }
    };
    let reload_log = init_logging(&config);
    // The main thread accepts connections and runs the server's own
    // tasks; `threads` connection loops serve the clients (`net::loops`).
    let runtime = if config.server_runtime == "shared" {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("strata-worker")
            .on_thread_start(strata_engine::enter_loop)
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .thread_name("strata-blocking")
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(r) => r,
        Err(e) => {
            eprintln!("strata-server: cannot start the runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = runtime.block_on(async move {
        let handle = match strata_server::start(config, config_file).await {
            Ok(h) => {
                h.shared.set_log_reloader(reload_log);
                h
            }
            Err(e) => {
                tracing::error!("cannot start: {e}");
                eprintln!("strata-server: cannot start: {e}");
                return 1;
            }
        };
        for a in &handle.addrs {
            tracing::info!("Ready to accept connections on {a}");
        }
        let shared = handle.shared.clone();
        let save = tokio::select! {
            _ = async {
                wait_for_signal().await;
                // As Redis: a running script holds the shutdown back (the
                // server keeps serving, so SCRIPT KILL or SHUTDOWN NOSAVE
                // can end it); it starts once the script is over.
                if shared.scripts.busy.running() {
                    tracing::warn!(
                        "Received SIGTERM scheduling shutdown... (after the running script: \
                         SCRIPT KILL or SHUTDOWN NOSAVE end it)"
                    );
                    tokio::select! {
                        _ = shared.scripts.busy.idle() => {}
                        _ = wait_for_signal() => {
                            // A second signal: the operator insists (as
                            // Redis's second SIGINT). What was
                            // acknowledged is in the log as appendfsync
                            // promised, as after kill -9.
                            tracing::warn!("You insist... exiting now.");
                            std::process::exit(1);
                        }
                    }
                }
            } => strata_engine::ShutdownSave::Save,
            s = handle.shared.shutdown_command() => s,
        };
        tracing::info!("Shutting down ({save:?})");
        match handle.shutdown_cleanly(save).await {
            Ok(()) => {
                tracing::info!("Strata is now ready to exit, bye bye...");
                0
            }
            Err(e) => {
                tracing::error!("shutdown could not save: {e}");
                1
            }
        }
    });
    std::process::exit(code);
}

async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}

/// The tracing filter for a Redis log level.
fn filter(level: &LogLevel) -> tracing_subscriber::EnvFilter {
    tracing_subscriber::EnvFilter::new(match level {
        LogLevel::Debug | LogLevel::Verbose => "debug",
        LogLevel::Notice => "info",
        LogLevel::Warning => "warn",
        LogLevel::Nothing => "off",
    })
}

/// Installs the log subscriber; returns how to change its level later
/// (CONFIG SET loglevel).
fn init_logging(c: &Config) -> LogReloader {
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter(&c.loglevel))
        .with_target(false);
    if c.logfile.is_empty() {
        let builder = builder.with_filter_reloading();
        let handle = builder.reload_handle();
        builder.init();
        Box::new(move |l: &LogLevel| {
            let _ = handle.reload(filter(l));
        })
    } else {
        match std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&c.logfile)
        {
            Ok(f) => {
                let builder = builder
                    .with_ansi(false)
                    .with_writer(std::sync::Mutex::new(f))
                    .with_filter_reloading();
                let handle = builder.reload_handle();
                builder.init();
                Box::new(move |l: &LogLevel| {
                    let _ = handle.reload(filter(l));
                })
            }
            Err(e) => {
                eprintln!("strata-server: cannot open logfile {}: {e}", c.logfile);
                std::process::exit(1);
            }
        }
    }
}
