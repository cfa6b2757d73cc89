//! What the programs read from `/proc`: a process's CPU time and resident memory, and how a
//! client uses TCP (connections opened, sockets held open).

use std::process::Command;

use anyhow::{Context as _, bail};

/// A process to read from: a PID, or this process.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Proc {
    /// The process with this PID.
    Pid(u32),
    /// The load generator itself.
    Myself,
}

impl Proc {
    fn path(self, file: &str) -> String {
        match self {
            Proc::Pid(pid) => format!("/proc/{pid}/{file}"),
            Proc::Myself => format!("/proc/self/{file}"),
        }
    }

    /// User plus system CPU time of every thread, in clock ticks (`utime + stime`, fields 14
    /// and 15 of `/proc/PID/stat`).
    pub(crate) fn cpu_ticks(self) -> anyhow::Result<u64> {
        let path = self.path("stat");
        let stat = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        // The command name (field 2) is in parentheses and may hold spaces or parentheses:
        // the fields that follow start after the last `)`.
        let rest = stat
            .rsplit_once(')')
            .map(|(_, rest)| rest)
            .with_context(|| format!("no `)` in {path}"))?;
        // `rest` starts at field 3 (state): utime and stime are fields 14 and 15.
        let mut fields = rest.split_whitespace().skip(11);
        let mut next = || -> anyhow::Result<u64> {
            fields
                .next()
                .with_context(|| format!("{path} is too short"))?
                .parse()
                .with_context(|| format!("a CPU time in {path} is not a number"))
        };
        Ok(next()? + next()?)
    }

    /// Resident memory (`VmRSS` of `/proc/PID/status`), in KiB.
    pub(crate) fn rss_kib(self) -> anyhow::Result<u64> {
        let path = self.path("status");
        let status = std::fs::read_to_string(&path).with_context(|| format!("reading {path}"))?;
        for line in status.lines() {
            if let Some(value) = line.strip_prefix("VmRSS:") {
                let kib = value.trim().trim_end_matches("kB").trim();
                return kib
                    .parse()
                    .with_context(|| format!("VmRSS in {path} is not a number: {value:?}"));
            }
        }
        bail!("no VmRSS in {path}")
    }
}

/// Clock ticks per second, from `getconf CLK_TCK` (100 on Linux when that fails).
pub(crate) fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .filter(|&ticks| ticks > 0)
        .unwrap_or(100)
}

/// CPU time of a process over a window: read at the start, then at the end.
#[derive(Debug)]
pub(crate) struct CpuWindow {
    proc: Proc,
    start: u64,
}

impl CpuWindow {
    /// Starts the window now.
    pub(crate) fn start(proc: Proc) -> anyhow::Result<CpuWindow> {
        Ok(CpuWindow {
            proc,
            start: proc.cpu_ticks()?,
        })
    }

    /// Ends the window now: the CPU time spent in it, in microseconds.
    pub(crate) fn end(&self, ticks_per_second: u64) -> anyhow::Result<f64> {
        let ticks = self.proc.cpu_ticks()?.saturating_sub(self.start);
        Ok(ticks as f64 * 1e6 / ticks_per_second as f64)
    }
}

/// TCP connections this machine has opened since boot: `ActiveOpens` in the `Tcp:` lines of
/// `/proc/net/snmp` (the network namespace's, so other processes' connects count too).
pub(crate) fn active_opens() -> Option<u64> {
    let snmp = std::fs::read_to_string("/proc/net/snmp").ok()?;
    let mut tcp = snmp.lines().filter(|line| line.starts_with("Tcp:"));
    let (names, values) = (tcp.next()?, tcp.next()?);
    let index = names.split_whitespace().position(|n| n == "ActiveOpens")?;
    values.split_whitespace().nth(index)?.parse().ok()
}

/// The sockets this process holds open: its file descriptors that link to `socket:[...]`.
pub(crate) fn open_sockets() -> Option<u64> {
    let entries = std::fs::read_dir("/proc/self/fd").ok()?;
    let sockets = entries
        .filter_map(Result::ok)
        .filter_map(|entry| std::fs::read_link(entry.path()).ok())
        .filter(|target| target.to_string_lossy().starts_with("socket:"))
        .count();
    u64::try_from(sockets).ok()
}
