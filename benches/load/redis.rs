//! A `redis-server` of the benchmark's own and what Redis says of itself (`INFO`, `DBSIZE`),
//! for `mcp-load-suite` and `mcp-failover`.

use std::collections::HashMap;

use anyhow::Context as _;
use mcp_streamable_redis::testing::RedisServer;

/// A throwaway `redis-server` on a free loopback port, in a temporary directory, stopped (and
/// the directory removed) when dropped.
#[derive(Debug)]
pub(crate) struct Redis {
    _server: RedisServer,
    /// Its process id, for `/proc/PID/stat`.
    pub(crate) pid: u32,
    /// The URL nodes connect to.
    pub(crate) url: String,
}

impl Redis {
    /// Starts one and asks it its process id.
    pub(crate) fn start() -> anyhow::Result<Redis> {
        let server = RedisServer::start().context("starting redis-server")?;
        let url = server.url();
        let pid = info(&url, "server")?
            .get("process_id")
            .and_then(|pid| pid.parse().ok())
            .context("no process_id in INFO server")?;
        Ok(Redis {
            _server: server,
            pid,
            url,
        })
    }

    /// The fields of `INFO section`.
    pub(crate) fn info(&self, section: &str) -> anyhow::Result<HashMap<String, String>> {
        info(&self.url, section)
    }

    /// A number of `INFO section`.
    pub(crate) fn info_number(&self, section: &str, field: &str) -> anyhow::Result<u64> {
        self.info(section)?
            .get(field)
            .and_then(|value| value.parse().ok())
            .with_context(|| format!("no number {field} in INFO {section}"))
    }

    /// How many keys it holds.
    pub(crate) fn dbsize(&self) -> anyhow::Result<u64> {
        Ok(redis::cmd("DBSIZE").query(&mut self.connection()?)?)
    }

    /// `MEMORY USAGE` of each key of one session (found by its record, `P:{S}:r`), by kind
    /// (`session`, the hash; `record`, its owner and `initialize`; `finished`, the finished
    /// streams kept for the resume window, `initialize`'s answer among them; `queue`, their
    /// order), those it has: where a session's bytes go.
    pub(crate) fn session_keys(&self, prefix: &str) -> anyhow::Result<Vec<(String, u64)>> {
        let mut connection = self.connection()?;
        let (_, found): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(0)
            .arg("MATCH")
            .arg(format!("{prefix}:{{*}}:r"))
            .arg("COUNT")
            .arg(1000)
            .query(&mut connection)?;
        let key = found.first().context("no session's record in Redis")?;
        let session = key.strip_suffix(":r").context("a record's key")?;
        let mut sizes = Vec::new();
        let kinds = [
            ("session", ""),
            ("record", ":r"),
            ("finished", ":f"),
            ("queue", ":q"),
        ];
        for (kind, suffix) in kinds {
            let bytes: Option<u64> = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(format!("{session}{suffix}"))
                .arg("SAMPLES")
                .arg(0)
                .query(&mut connection)?;
            if let Some(bytes) = bytes {
                sizes.push((kind.to_owned(), bytes));
            }
        }
        Ok(sizes)
    }

    /// Looks at every key once: Redis reclaims then the expired ones it has not swept yet.
    pub(crate) fn sweep(&self) -> anyhow::Result<u64> {
        let mut connection = self.connection()?;
        let mut cursor = 0u64;
        let mut seen = 0;
        for _ in 0..1_000_000 {
            let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(1000)
                .query(&mut connection)?;
            seen += keys.len() as u64;
            cursor = next;
            if cursor == 0 {
                break;
            }
        }
        Ok(seen)
    }

    /// Forgets every key, so that a measurement starts from an empty Redis.
    pub(crate) fn flush(&self) -> anyhow::Result<()> {
        Ok(redis::cmd("FLUSHALL").query(&mut self.connection()?)?)
    }

    fn connection(&self) -> anyhow::Result<redis::Connection> {
        connect(&self.url)
    }
}

fn connect(url: &str) -> anyhow::Result<redis::Connection> {
    redis::Client::open(url)?
        .get_connection()
        .with_context(|| format!("connecting to {url}"))
}

/// `INFO section` as its `field:value` lines (a connection of its own, closed on return).
fn info(url: &str, section: &str) -> anyhow::Result<HashMap<String, String>> {
    let text: String = redis::cmd("INFO").arg(section).query(&mut connect(url)?)?;
    Ok(text
        .lines()
        .filter_map(|line| line.split_once(':'))
        .map(|(field, value)| (field.to_owned(), value.trim().to_owned()))
        .collect())
}
