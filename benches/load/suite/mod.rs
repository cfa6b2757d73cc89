//! `mcp-load-suite`: the load benchmark behind `cargo xtask bench --load`.
//!
//! ```text
//! mcp-load-suite [--output BENCHMARKS.md] [--duration 5] [--warmup 1] [--runs 3]
//!                [--concurrency 1,16,64] [--servers ours,ours-json,ours-stateless,rmcp,...]
//!                [--idle-sessions 10000] [--notifications 1000000]
//!                [--client-callers 16] [--clients ours,rmcp,rmcp-pooled] [--no-pin]
//!                [--quiet-wait 30] [--bin-dir DIR] [--echo-server PATH]
//!                [--redis-sessions 10000] [--failover-trials 10]
//! ```
//!
//! It expects release builds: the `benches` binaries next to itself (`--bin-dir`) and the
//! echo server example in `examples/` below them (`--echo-server`). Each server runs pinned to
//! CPU 0 and the load generator (`mcp-load`) to CPU 1, when there are two cores and `taskset`.
//!
//! 1. Throughput: every server is started, then each run of `mcp-load --mode calls` goes
//!    through the servers in turn (interleaved, so that a slow minute of a shared machine
//!    does not land on one server only), at each concurrency, `--runs` times. The `-26`
//!    servers are spoken to the per-request way of 2026-07-28 (`mcp-load --protocol
//!    2026-07-28`), the others with sessions. `ours-otlp` exports its spans and metrics to an
//!    OTLP/HTTP sink of the suite's (`otlp_sink`), pinned beside the load generator; a run
//!    during which no span reached it is an error.
//! 2. Idle sessions: ours, rmcp and tower-mcp, each freshly started, with `--idle-sessions`
//!    sessions, their connections kept open, then closed.
//! 3. The standalone stream: `mcp-flood`, freshly started, sends `--notifications`
//!    notifications to one session.
//! 4. Client throughput: our echo server, freshly started, and `mcp-client-load` for each of
//!    `--clients` in turn (interleaved), `--client-callers` callers on one session each.
//!
//! 5. Several nodes (Redis): the servers `ours-redis` (one node of `echo_server --redis`),
//!    `ours-redis-2` (two, behind `mcp-proxy`, round robin per request) and `ours-redis-hop`
//!    (two, every request sent to the node that does not hold its session) run in the
//!    throughput section beside `ours`; then `--redis-sessions` idle sessions of one node,
//!    measured in Redis's own figures just after they go idle and again past a resume window
//!    of 1 s, and `--failover-trials` trials of `mcp-failover`. The suite starts
//!    its own `redis-server` for them (a free loopback port, a temporary directory, stopped at
//!    the end), pinned with the servers, and counts its CPU apart.
//!
//! 6. Gateways (`--gateways`, run alone): ours (`mcp-gateway serve`) against supergateway and
//!    mcp-proxy (npm and PyPI) in front of the same stdio child (`gateways/`); its section
//!    replaces the one of the same title in `--output`, and a run without it keeps that section.
//!
//! `--servers ''`, `--idle-sessions 0`, `--notifications 0`, `--client-callers 0`,
//! `--redis-sessions 0` and `--failover-trials 0` each skip their section.
//!
//! Before each run it waits (up to `--quiet-wait` seconds) for the machine to be idle, since
//! other work on a small machine skews the figures; the report says how many runs started on
//! a busy machine. It prints the tables (medians of the runs) and writes them, with the date
//! and the machine, to `--output`, keeping the old file's sections written by hand
//! (`by_hand`) where they stood.

mod auth;
mod by_hand;
mod cells;
mod client;
mod figures;
mod gateways;
mod kinds;
mod machine;
mod nodes;
mod otlp_sink;
mod quiet;
mod results;
mod servers;
mod table;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::builder::RangedU64ValueParser;

use self::cells::{Calls, Cell};
use self::kinds::{FLOOD, ServerKind};
use self::otlp_sink::Received;
use self::quiet::Quiet;
use self::results::Results;
use self::servers::{Launcher, Server};
use crate::cli;
use crate::redis::Redis;
use crate::report::{CallsReport, IdleReport, StreamReport};

/// The load benchmark behind `cargo xtask bench --load`: runs every server, generator and
/// client of the package and writes the tables. Each count given as 0 (or a list given as
/// `''`) skips its section.
#[derive(Debug, clap::Parser)]
#[command(name = "mcp-load-suite")]
pub struct Args {
    /// Where to write the report (markdown) besides printing it.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Where the package's binaries are; by default, next to this program.
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// The echo server example; by default `examples/echo_server` under the binaries.
    #[arg(long, value_name = "PATH")]
    pub echo_server: Option<PathBuf>,
    /// The echo server of a baseline commit, for an A/B in one run: the servers `base` and
    /// `base-26`, run as `ours` and `ours-26` and interleaved with them (the default servers
    /// then), and a section of ours ÷ baseline.
    #[arg(long, value_name = "PATH")]
    pub baseline_echo_server: Option<PathBuf>,
    /// What the report calls the baseline (its commit).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "the baseline",
        requires = "baseline_echo_server"
    )]
    pub baseline_name: String,
    /// Seconds measured per run.
    #[arg(long, value_name = "SECS", default_value_t = 5.0, value_parser = cli::trimmed::<f64>)]
    pub duration: f64,
    /// Seconds of warm-up before each run's window.
    #[arg(long, value_name = "SECS", default_value_t = 1.0, value_parser = cli::trimmed::<f64>)]
    pub warmup: f64,
    /// Runs of each server at each concurrency, and of each client.
    #[arg(long, default_value_t = 3, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub runs: usize,
    /// The sessions of the throughput runs.
    #[arg(
        long,
        value_name = "C,...",
        value_delimiter = ',',
        default_value = "1,16,64",
        value_parser = cli::trimmed::<usize>
    )]
    pub concurrency: Vec<usize>,
    /// The servers of the throughput runs, by key; every one but `ours-no-store`, `ours-otel`,
    /// `ours-otlp`, `ours-otlp-sampled` and the baseline's by default; with
    /// `--baseline-echo-server`,
    /// `ours,base,ours-26,base-26`.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',')]
    pub servers: Option<Vec<String>>,
    /// Idle sessions opened on each server (fewer than 2: not run).
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = cli::trimmed::<usize>)]
    pub idle_sessions: usize,
    /// Notifications on the standalone stream.
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = cli::trimmed::<u64>)]
    pub notifications: u64,
    /// Callers on the one session of each client.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = cli::trimmed::<usize>)]
    pub client_callers: usize,
    /// The clients of the client section, by key; every one by default.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',')]
    pub clients: Option<Vec<String>>,
    /// Runs without pinning the servers and the load generator to cores of their own.
    #[arg(long)]
    pub no_pin: bool,
    /// The most seconds to wait for an idle machine before each run.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = cli::trimmed::<f64>)]
    pub quiet_wait: f64,
    /// Idle sessions of one node on Redis (fewer than 2: not run).
    #[arg(long, value_name = "N", default_value_t = 10_000, value_parser = cli::trimmed::<usize>)]
    pub redis_sessions: usize,
    /// Failover trials.
    #[arg(long, value_name = "N", default_value_t = 10, value_parser = cli::trimmed::<usize>)]
    pub failover_trials: usize,
    /// Runs the gateway comparison alone (`mcp-gateway` against supergateway and mcp-proxy),
    /// its section replacing the old one in `--output`.
    #[arg(long)]
    pub gateways: bool,
    /// The gateways compared, by key; every one by default.
    #[arg(long, value_name = "KEY,...", value_delimiter = ',')]
    pub gateway_list: Option<Vec<String>>,
    /// Sessions, or per-request connections, of the gateways' closed loops.
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub gateway_concurrency: usize,
    /// Idle sessions opened on each gateway (one child each).
    #[arg(long, value_name = "N", default_value_t = 200, value_parser = RangedU64ValueParser::<usize>::new().range(2..))]
    pub gateway_idle_sessions: usize,
    /// Children killed per gateway and run.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub death_trials: usize,
    /// The project's root, where the gateways' child and the installed peers are.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub root: PathBuf,
}

/// What the suite runs: the command line, its lists resolved.
#[derive(Debug)]
struct Options {
    output: Option<PathBuf>,
    bin_dir: PathBuf,
    echo_server: Option<PathBuf>,
    /// The baseline's echo server and its name, for an A/B run.
    baseline: Option<(PathBuf, String)>,
    duration: f64,
    warmup: f64,
    runs: usize,
    concurrency: Vec<usize>,
    servers: Vec<&'static ServerKind>,
    idle_sessions: usize,
    notifications: u64,
    client_callers: usize,
    clients: Vec<&'static client::ClientKind>,
    pin: bool,
    quiet_wait: f64,
    redis_sessions: usize,
    failover_trials: usize,
    /// The gateway comparison, when it runs (alone).
    gateways: Option<gateways::Plan>,
}

impl Options {
    /// The servers and clients of `args` found by key, the defaults filled in.
    fn new(args: Args) -> anyhow::Result<Options> {
        let servers = pick(args.servers.as_deref(), kinds::SERVERS, "server", |s| s.key)?
            .unwrap_or_else(|| {
                let all = kinds::SERVERS.iter();
                if args.baseline_echo_server.is_some() {
                    let ab = ["ours", "base", "ours-26", "base-26"];
                    return all.filter(|server| ab.contains(&server.key)).collect();
                }
                all.filter(|server| !kinds::ASKED_ONLY.contains(&server.key))
                    .collect()
            });
        let clients = pick(args.clients.as_deref(), client::CLIENTS, "client", |c| {
            c.key
        })?
        .unwrap_or_else(|| client::CLIENTS.iter().collect());
        let bin_dir = match args.bin_dir {
            Some(dir) => dir,
            None => std::env::current_exe()?
                .parent()
                .context("no directory")?
                .to_path_buf(),
        };
        Ok(Options {
            output: args.output,
            bin_dir,
            echo_server: args.echo_server,
            baseline: args
                .baseline_echo_server
                .map(|path| (path, args.baseline_name)),
            duration: args.duration,
            warmup: args.warmup,
            runs: args.runs,
            concurrency: args.concurrency,
            servers,
            idle_sessions: args.idle_sessions,
            notifications: args.notifications,
            client_callers: args.client_callers,
            clients,
            pin: !args.no_pin && Launcher::can_pin(),
            quiet_wait: args.quiet_wait,
            redis_sessions: args.redis_sessions,
            failover_trials: args.failover_trials,
            gateways: args.gateways.then_some(gateways::Plan {
                root: args.root,
                keys: args.gateway_list,
                concurrency: args.gateway_concurrency,
                duration: args.duration,
                warmup: args.warmup,
                runs: args.runs,
                idle_sessions: args.gateway_idle_sessions,
                death_trials: args.death_trials,
            }),
        })
    }

    /// What the client-throughput section runs.
    fn client_plan(&self) -> client::Plan<'_> {
        client::Plan {
            clients: &self.clients,
            callers: self.client_callers,
            runs: self.runs,
            duration: self.duration,
            warmup: self.warmup,
        }
    }
}

/// The entries of `all` that `keys` names, in that order, blank keys skipped (`''` names
/// none); `None` without `keys`. `what` they are names them in the error for an unknown key.
fn pick<T>(
    keys: Option<&[String]>,
    all: &'static [T],
    what: &str,
    key: fn(&T) -> &'static str,
) -> anyhow::Result<Option<Vec<&'static T>>> {
    let Some(keys) = keys else {
        return Ok(None);
    };
    let find = |wanted: &str| {
        all.iter()
            .find(|entry| key(entry) == wanted)
            .with_context(|| {
                let known: Vec<&str> = all.iter().map(key).collect();
                format!("unknown {what} {wanted:?}: one of {}", known.join(", "))
            })
    };
    let wanted = keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty());
    wanted.map(find).collect::<anyhow::Result<_>>().map(Some)
}

/// Runs `mcp-load-suite`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut options = Options::new(args)?;
    let mut launcher = Launcher {
        echo_server: options
            .echo_server
            .clone()
            .unwrap_or_else(|| options.bin_dir.join("examples").join("echo_server")),
        bin_dir: options.bin_dir.clone(),
        pin: options.pin,
        redis: None,
        auth: None,
        baseline: options.baseline.as_ref().map(|(path, _)| path.clone()),
    };
    if let Some(plan) = &options.gateways {
        return compare_gateways(plan, &launcher, &options);
    }
    let redis = redis(&mut options, &mut launcher);
    let auth_dir = std::env::temp_dir().join(format!("mcp-load-suite-{}", std::process::id()));
    authority(&mut options, &mut launcher, &auth_dir);
    let date = machine::now_utc();
    let machine = machine::describe();
    eprintln!("mcp-load-suite: {machine}");
    let started = Instant::now();

    let mut quiet = Quiet::new(options.quiet_wait);
    let mut results = Results::default();
    if !options.servers.is_empty() && !options.concurrency.is_empty() {
        let redis_pid = redis.as_ref().map(|r| r.pid);
        (results.calls, results.exported) = throughput(&options, &launcher, &mut quiet, redis_pid)?;
    }
    if options.idle_sessions >= 2 {
        // Ours, rmcp and tower-mcp with connections kept open, then closed.
        for (key, close) in [
            ("ours", false),
            ("ours", true),
            ("rmcp", false),
            ("rmcp", true),
            ("tower-mcp", false),
            ("tower-mcp", true),
        ] {
            let kind = kinds::find(key).context("a known server")?;
            quiet.wait();
            match idle(&launcher, kind, options.idle_sessions, close) {
                Ok(report) => results.idle.push((kind.label, report)),
                Err(err) => eprintln!("idle sessions, {}: {err:#}", kind.label),
            }
        }
    }
    if options.notifications > 0 {
        quiet.wait();
        match stream(&launcher, options.notifications) {
            Ok(report) => results.stream = Some(report),
            Err(err) => eprintln!("standalone stream: {err:#}"),
        }
    }
    let client_plan = options.client_plan();
    if client_plan.callers > 0 && !client_plan.clients.is_empty() {
        match client::measure(&launcher, &client_plan, &mut quiet) {
            Ok(runs) => results.clients = Some(runs),
            Err(err) => eprintln!("client throughput: {err:#}"),
        }
    }

    if let Some(redis) = &redis {
        if options.redis_sessions >= 2 {
            quiet.wait();
            match nodes::idle(&launcher, redis, options.redis_sessions) {
                Ok(idle) => results.nodes.idle = Some(idle),
                Err(err) => eprintln!("idle sessions in Redis: {err:#}"),
            }
        }
        if options.failover_trials > 0 {
            quiet.wait();
            match nodes::failover(&launcher, redis, options.failover_trials) {
                Ok(report) => results.nodes.failover = Some(report),
                Err(err) => eprintln!("failover: {err:#}"),
            }
        }
    }
    drop(redis);
    let _ = std::fs::remove_dir_all(&auth_dir);

    let markdown = render(&options, &results, &date, &machine, &launcher, &quiet);
    println!("{markdown}");
    if let Some(path) = &options.output {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let markdown = by_hand::carry_over(&old, &gateways::carry_over(&old, &markdown));
        std::fs::write(path, &markdown).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("mcp-load-suite: wrote {}", path.display());
    }
    eprintln!(
        "mcp-load-suite: done in {:.0} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The gateway comparison alone: its section printed, and spliced into `--output`.
fn compare_gateways(
    plan: &gateways::Plan,
    launcher: &Launcher,
    options: &Options,
) -> anyhow::Result<()> {
    let date = machine::now_utc();
    let machine = machine::describe();
    eprintln!("mcp-load-suite: gateways: {machine}");
    let mut quiet = Quiet::new(options.quiet_wait);
    let pinning = if launcher.pin {
        "each gateway (and its children) pinned to CPU 0 and the load generator to CPU 1"
    } else {
        "no pinning"
    };
    let measured = gateways::run(plan, launcher, &mut quiet)?;
    let context = format!(
        "Measured on {date} by `mcp-load-suite --gateways` on {machine}; {pinning}. {}",
        quiet.summary()
    );
    let section = measured.section(plan, &context);
    println!("{section}");
    if let Some(path) = &options.output {
        let old = std::fs::read_to_string(path).unwrap_or_default();
        std::fs::write(path, gateways::splice(&old, &section))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!(
            "mcp-load-suite: wrote the gateway section of {}",
            path.display()
        );
    }
    Ok(())
}

/// The suite's authority (a key set served on loopback, tokens, a DPoP key in `dir`), when a
/// protected row runs; without it, those rows are skipped and say why.
fn authority(options: &mut Options, launcher: &mut Launcher, dir: &std::path::Path) {
    if !options.servers.iter().any(|s| s.is_protected()) {
        return;
    }
    let started = std::fs::create_dir_all(dir)
        .map_err(anyhow::Error::from)
        .and_then(|()| auth::Authority::start(dir));
    match started {
        Ok(auth) => launcher.auth = Some(auth),
        Err(err) => {
            eprintln!("mcp-load-suite: no authority, the protected rows are skipped: {err:#}");
            options.servers.retain(|s| !s.is_protected());
        }
    }
}

/// The suite's Redis, when a section needs one; without it (no `redis-server`), the sections
/// on Redis are skipped and say why.
fn redis(options: &mut Options, launcher: &mut Launcher) -> Option<Redis> {
    let wanted = options.servers.iter().any(|s| s.needs_redis())
        || options.redis_sessions >= 2
        || options.failover_trials > 0;
    if !wanted {
        return None;
    }
    match nodes::start_redis(launcher) {
        Ok(redis) => {
            launcher.redis = Some(redis.url.clone());
            Some(redis)
        }
        Err(err) => {
            eprintln!("mcp-load-suite: no Redis, the sections on Redis are skipped: {err:#}");
            options.servers.retain(|s| !s.needs_redis());
            None
        }
    }
}

/// Every server at every concurrency, `runs` times, interleaved; and what the OTLP sinks of
/// the servers exporting to one received over the runs.
fn throughput(
    options: &Options,
    launcher: &Launcher,
    quiet: &mut Quiet,
    redis_pid: Option<u32>,
) -> anyhow::Result<(Calls, Vec<(&'static ServerKind, Received)>)> {
    let mut running = Vec::new();
    for kind in &options.servers {
        running.push((*kind, launcher.start(kind)?));
    }
    let mut cells: Vec<Cell> = Vec::new();
    for kind in &options.servers {
        for &concurrency in &options.concurrency {
            cells.push(Cell {
                server: kind,
                concurrency,
                runs: Vec::new(),
            });
        }
    }
    for run in 1..=options.runs {
        for &concurrency in &options.concurrency {
            for (kind, server) in &running {
                quiet.wait();
                let mut args = vec![
                    "--url".to_owned(),
                    server.url.clone(),
                    "--concurrency".to_owned(),
                    concurrency.to_string(),
                    "--duration".to_owned(),
                    options.duration.to_string(),
                    "--warmup".to_owned(),
                    options.warmup.to_string(),
                ];
                args.extend(server.pid_args());
                if kind.needs_redis()
                    && let Some(pid) = redis_pid
                {
                    args.extend(["--side-pid".to_owned(), format!("redis={pid}")]);
                }
                args.extend(kind.family.load_args().iter().map(|a| (*a).to_owned()));
                args.extend(kind.auth_args(launcher));
                match measure_run(launcher, server, &args) {
                    Ok(report) => {
                        let sides: String = report
                            .side_cpu_us_per_req
                            .iter()
                            .map(|(name, us)| format!("  {name} {us:.1} µs/req"))
                            .collect();
                        eprintln!(
                            "run {run}, {:<40} C={concurrency:<3} {:>7.0} req/s  p99 {:>6.0} µs  \
                             CPU {:>5.1} µs/req  errors {}{sides}",
                            kind.label,
                            report.rps,
                            report.p99_us,
                            report.server_cpu_us_per_req.unwrap_or(f64::NAN),
                            report.errors
                        );
                        for sample in &report.error_samples {
                            eprintln!("    {sample}");
                        }
                        if let Some(cell) = cells
                            .iter_mut()
                            .find(|c| c.server.key == kind.key && c.concurrency == concurrency)
                        {
                            cell.runs.push(report);
                        }
                    }
                    Err(err) => eprintln!("run {run}, {}, C={concurrency}: {err:#}", kind.label),
                }
            }
        }
    }
    let exported = running
        .iter()
        .filter_map(|(kind, server)| Some((*kind, server.exported()?)))
        .collect();
    Ok((Calls::new(cells), exported))
}

/// One run of the load generator with `args` against `server`. For a server exporting to an
/// OTLP sink, a run during which no span reached the sink is an error, not a figure: it would
/// not have measured exporting.
fn measure_run(
    launcher: &Launcher,
    server: &Server,
    args: &[String],
) -> anyhow::Result<CallsReport> {
    let before = server.exported();
    let report = launcher.load::<CallsReport>(args)?;
    if let (Some(before), Some(after)) = (before, server.exported())
        && after.traces.bytes <= before.traces.bytes
    {
        anyhow::bail!(
            "the OTLP sink received no span during the run ({} trace exports in all): this run \
             measured no exporting",
            after.traces.exports
        );
    }
    Ok(report)
}

fn idle(
    launcher: &Launcher,
    kind: &ServerKind,
    sessions: usize,
    close: bool,
) -> anyhow::Result<IdleReport> {
    let server = launcher.start(kind)?;
    let report: IdleReport = launcher.load(&server.idle_args(sessions, close))?;
    eprintln!(
        "idle, {:<32} connections {}: {:.2} KiB/session ({} sessions, {} errors)",
        kind.label,
        if close { "closed" } else { "open  " },
        report.kib_per_session,
        report.sessions_ok,
        report.errors
    );
    Ok(report)
}

fn stream(launcher: &Launcher, notifications: u64) -> anyhow::Result<StreamReport> {
    let server = launcher.start(&FLOOD)?;
    let args = [
        "--url".to_owned(),
        server.url.clone(),
        "--mode".to_owned(),
        "stream".to_owned(),
        "--notifications".to_owned(),
        notifications.to_string(),
        "--server-pid".to_owned(),
        server.pid.to_string(),
    ];
    let report: StreamReport = launcher.load(&args)?;
    eprintln!(
        "standalone stream: {} notifications, {:.0}/s, VmRSS {:+.1}% from 10,000 to the end, {} errors",
        report.received, report.per_second, report.growth_percent, report.errors
    );
    Ok(report)
}

fn render(
    options: &Options,
    results: &Results,
    date: &str,
    machine: &str,
    launcher: &Launcher,
    quiet: &Quiet,
) -> String {
    let pinning = if launcher.pin {
        "each server pinned to CPU 0 and the load generator to CPU 1 (`taskset`)"
    } else {
        "no pinning (fewer than two cores, or no `taskset`): server and load generator share \
         the cores"
    };
    let mut out = format!(
        "# Load benchmark\n\n\
         Written by `cargo xtask bench --load` (`mcp-load-suite`, `benches/load/`) on {date}. \
         Do not edit its tables by hand: rerun it. The sections whose heading says \
         \"written by hand\" are notes and measurements of their own, which a run carries \
         over.\n\n\
         **Machine**: {machine}; {pinning}. {quiet}\n\n\
         ## Throughput and latency\n\n\
         `tools/call echo` in a closed loop by `mcp-load` (plain hyper, HTTP/1.1, \
         `TCP_NODELAY` on both sides, one connection per session, one thread); each session \
         first sends `initialize` and `notifications/initialized` (protocol 2025-06-18). The \
         2026-07-28 rows have no sessions: each connection sends its calls the per-request \
         way, every request carrying `_meta` (protocol version, client capabilities, client \
         info) and the headers `MCP-Protocol-Version: 2026-07-28`, `Mcp-Method` and \
         `Mcp-Name`; \"sessions\" there counts connections. Replies: how the servers \
         answered, JSON bodies or SSE streams. {warmup} s of warm-up, then \
         {duration} s measured; {runs} run(s) of each server at each concurrency, interleaved; \
         the table gives the medians of the runs (errors: the sum). Latency is until the \
         response is read, JSON or SSE. Server CPU is `utime + stime` from `/proc/PID/stat` \
         over the window (10 ms ticks); load gen. CPU is the load generator's share of its \
         core: near 100% the generator, not the server, is the limit, and CPU per request is \
         the figure to compare. Every reply is checked to be its own request's result.\n\n",
        warmup = options.warmup,
        duration = options.duration,
        runs = options.runs,
        quiet = quiet.summary(),
    );
    if results.calls.is_empty() {
        out += "Not run.\n";
    } else {
        out += &table::calls_table(results);
        out += "\nThe servers:\n\n";
        let mut listed: Vec<&str> = Vec::new();
        for cell in results.calls.iter() {
            if !listed.contains(&cell.server.key) {
                listed.push(cell.server.key);
                out += &format!("- {}: {}.\n", cell.server.label, cell.server.description);
            }
        }
        out += &table::exported_notes(results);
    }
    out += "\n## Ratios\n\n";
    out += &if results.calls.is_empty() {
        "Not run.\n".to_owned()
    } else {
        table::ratios_table(results)
    };
    if let Some((_, name)) = &options.baseline {
        out += &table::baseline_section(results, name);
    }
    out += "\n## Targets\n\nEach a ratio of medians measured in this run: ours stateful with SSE \
            replies and the event store on (the configuration users run) against rmcp, tower-mcp \
            and the ceiling; ours with JSON responses, stateless, and per request (2026-07-28) \
            against the ceiling (for the last, the ceiling sent the same per-request requests); \
            idle memory of ours; when `ours-otlp` (and `ours-otlp-sampled`) ran beside `ours`, its \
            CPU per request against theirs (issue 29).\n\n";
    let targets = table::targets(results);
    out += if targets.is_empty() {
        "Nothing measured.\n"
    } else {
        &targets
    };
    out += &format!(
        "\n## Idle sessions\n\n\
         `mcp-load --mode idle`: {sessions} sessions opened (the first as a warm-up), each \
         `initialize` and `notifications/initialized`, then nothing; the server's `VmRSS` \
         (`/proc/PID/status`) before and after, one second after the last. With connections \
         kept open, each session's HTTP/1.1 connection counts too; closed, only the session \
         (and what its application keeps: the echo server drops the `http::request::Parts` it \
         is started with, which it never reads).\n\n",
        sessions = options.idle_sessions
    );
    out += &if results.idle.is_empty() {
        "Not run.\n".to_owned()
    } else {
        table::idle_table(results)
    };
    out += "\n## Standalone stream\n\n\
            `mcp-load --mode stream` against `mcp-flood` (our server configured like the echo \
            server's default, in-memory event store on, plus a `flood {from, count}` tool that \
            sends `count` notifications on the standalone stream): one session's GET stream \
            receives them in batches of 5,000, each checked in order, and the server's memory \
            is read along the way.\n\n";
    out += &results
        .stream
        .as_ref()
        .map_or_else(|| "Not run.\n".to_owned(), table::stream_section);
    out += "\n## Client throughput\n\n";
    match &results.clients {
        Some(runs) => out += &client::section(runs, &options.client_plan()),
        None => out += "Not run.\n",
    }
    let context = format!(
        "Measured on {date} by `mcp-load-suite` on {machine}; {pinning}. {quiet}",
        quiet = quiet.summary()
    );
    out += &nodes::section(
        &results.calls,
        &results.nodes,
        options.redis_sessions,
        &context,
    );
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn servers(line: &str) -> Vec<&'static str> {
        let words = std::iter::once("mcp-load-suite").chain(line.split_whitespace());
        let options = Options::new(Args::try_parse_from(words).unwrap()).unwrap();
        options.servers.iter().map(|s| s.key).collect()
    }

    #[test]
    fn the_rows_run_only_when_asked_for_are_left_out_by_default() {
        let default = servers("");
        assert!(default.contains(&"ours") && default.contains(&"ceiling"));
        for asked_only in kinds::ASKED_ONLY {
            assert!(!default.contains(asked_only), "{asked_only}");
        }
        assert_eq!(
            servers("--servers ours,ours-otel,ours-otlp"),
            ["ours", "ours-otel", "ours-otlp"]
        );
    }
}
