//! The pairs: which client runs against which server, with which flags and scenario, in the
//! order they run, and the names filters match and logs are filed under.

use std::fmt;

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Peer {
    /// This repository: `examples/echo_server.rs` as a server, `examples/interop_client.rs` as
    /// a client.
    Ours,
    /// The TypeScript SDK v1 (`@modelcontextprotocol/sdk`): `interop/ts/client.mjs`,
    /// `interop/ts/server.mjs`.
    Ts,
    /// The TypeScript SDK v2 (`@modelcontextprotocol/client` and `server`), the first to speak
    /// 2026-07-28: `interop/ts2/client.mjs`, `interop/ts2/server.mjs`.
    Ts2,
    /// The Python SDK 2.x: `interop/py/client.py`, `interop/py/server.py`.
    Py,
    /// The Python SDK's 1.x line: `interop/py1/client.py`.
    Py1,
    /// A server only: `mcp-gateway serve` in front of the TypeScript SDK's everything server
    /// (npm `@modelcontextprotocol/server-everything`, installed in `interop/ts`) on stdio.
    Everything,
    /// A server only: `mcp-gateway serve` in front of `interop/py/stdio_server.py`, the Python
    /// SDK's stdio server.
    PyStdio,
    /// A client only: the TypeScript SDK v1's `StdioClientTransport` running
    /// `mcp-gateway connect URL` (`interop/ts/connect.mjs`).
    TsConnect,
}

pub(super) use Peer::{Everything, Ours, Py, Py1, PyStdio, Ts, Ts2, TsConnect};

impl Peer {
    /// Whether this server is a stdio server behind `mcp-gateway serve`.
    pub(super) fn behind_gateway(self) -> bool {
        matches!(self, Everything | PyStdio)
    }
}

/// A client against a server, running one scenario.
#[derive(Debug)]
pub(super) struct Pair {
    pub(super) client: Peer,
    pub(super) server: Peer,
    /// The server's flags: echo_server's `--json-response` or `--stateless`, server.mjs's
    /// `--event-store`...
    pub(super) flags: &'static [&'static str],
    /// The client's scenario argument.
    pub(super) scenario: &'static str,
    /// Whether the server is protected: `interop/ts/auth_server.mjs` runs beside it as its
    /// authorization server, and echo_server gets the `--auth-*` flags naming it.
    pub(super) protected: bool,
    /// Whether the server is two echo_server nodes sharing a Redis (`nodes.rs`): the client is
    /// told both URLs and the first node's process id.
    pub(super) nodes: bool,
    /// Whether the server exports its spans over OTLP/HTTP in JSON to a receiver the client
    /// runs on a port the pair picks (`MCP_OTLP_PORT`).
    pub(super) traced: bool,
}

pub(super) const fn pair(
    client: Peer,
    server: Peer,
    flags: &'static [&'static str],
    scenario: &'static str,
) -> Pair {
    Pair {
        client,
        server,
        flags,
        scenario,
        protected: false,
        nodes: false,
        traced: false,
    }
}

/// `client` against two echo_server nodes sharing a Redis, in `scenario`.
pub(super) const fn nodes(client: Peer, scenario: &'static str) -> Pair {
    Pair {
        nodes: true,
        ..pair(client, Ours, &[], scenario)
    }
}

/// `client` against our echo server protected by `interop/ts/auth_server.mjs`, in `scenario`.
pub(super) const fn protected(client: Peer, scenario: &'static str) -> Pair {
    Pair {
        protected: true,
        ..pair(client, Ours, &[], scenario)
    }
}

/// `client` against our echo server exporting its spans to the client's OTLP receiver, in
/// `scenario`.
pub(super) const fn traced(client: Peer, scenario: &'static str) -> Pair {
    Pair {
        traced: true,
        ..pair(client, Ours, &[], scenario)
    }
}

/// The pairs, in the order they run. A pair is one line: our client against the TypeScript
/// server will be `pair(Ours, Ts, &["--event-store"], "full")`, once `Peers::client` knows how
/// to start our client.
pub(super) const PAIRS: &[Pair] = &[
    pair(Ts, Ours, &[], "full"),
    pair(Py, Ours, &[], "full"),
    pair(Ts, Ours, &[], "resume"),
    pair(Ts, Ours, &["--json-response"], "json"),
    pair(Py, Ours, &["--json-response"], "json"),
    pair(Ts, Ours, &["--stateless"], "stateless"),
    pair(Py, Ours, &["--stateless"], "stateless"),
    // The per-request protocol (2026-07-28) on the same endpoint: the version pinned, then the
    // SDK's discovery probe.
    pair(Py, Ours, &[], "modern"),
    pair(Py, Ours, &[], "auto"),
    pair(Ts2, Ours, &[], "modern"),
    pair(Ts2, Ours, &[], "auto"),
    // The Python SDK's 1.x line, which many deployed clients still run (logging/setLevel first).
    pair(Py1, Ours, &[], "full"),
    // Our client (`examples/interop_client.rs`) against the SDK servers.
    pair(Ours, Ts, &["--event-store"], "full"),
    pair(Ours, Py, &[], "full"),
    pair(Ours, Ts, &["--event-store"], "resume"),
    pair(Ours, Ts, &["--json-response"], "json"),
    pair(Ours, Py, &["--json-response"], "json"),
    pair(Ours, Ts, &["--stateless"], "stateless"),
    pair(Ours, Py, &["--stateless"], "stateless"),
    // The TypeScript SDK v2's server, in both eras: 2025-era requests served statelessly (its
    // default), and 2026-07-28.
    pair(Ours, Ts2, &[], "full"),
    pair(Ours, Ts2, &[], "modern"),
    // Our client mirrors `Mcp-Param-*` (SEP-2243) to the v2 server, which lists a tool
    // declaring one (the SDK neither writes nor checks them; its tool reports what came).
    pair(Ours, Ts2, &[], "param-headers"),
    // `mcp-gateway serve` in front of stdio servers nobody here wrote (issue 33): the TypeScript
    // SDK's everything server and the Python SDK's stdio server, each driven by the TypeScript
    // client, the Python client and ours, in the session family and in 2026-07-28. The pool of
    // one child makes `cancelled` ask the child that saw the cancellation.
    pair(Ts, Everything, &[], "everything"),
    pair(Py, Everything, &[], "everything"),
    pair(Ts2, Everything, &[], "modern"),
    pair(Py, Everything, &[], "modern"),
    pair(Ts, PyStdio, &[], "py-stdio"),
    pair(Py, PyStdio, &[], "py-stdio"),
    pair(Ts2, PyStdio, &[], "modern"),
    pair(Py, PyStdio, &[], "modern"),
    pair(Ours, PyStdio, &[], "full"),
    pair(Ours, PyStdio, &[], "resume"),
    pair(Ours, PyStdio, &[], "modern"),
    // `mcp-gateway connect` in front of HTTP servers, driven over stdio by the TypeScript SDK's
    // `StdioClientTransport`: our echo server, the SDK's own server, a stream cut and resumed,
    // and a protected server reached with OAuth.
    pair(TsConnect, Ours, &[], "connect"),
    pair(TsConnect, Ts, &["--event-store"], "connect"),
    pair(TsConnect, Ours, &[], "connect-resume"),
    protected(TsConnect, "connect-oauth"),
    // Authorization: the SDK's OAuth client against our protected server, with a minimal
    // authorization server of the test's.
    protected(Ts, "oauth"),
    // Telemetry (issue 29): the SDK's client puts a `traceparent` in a call's `_meta`; the
    // server's span, exported over OTLP/JSON to the client's receiver, has it as its parent.
    traced(Ts, "traceparent"),
    // Several nodes (issue 15): the SDK's client resumes through node b a stream whose holder,
    // node a, was killed mid-stream.
    nodes(Ts, "failover"),
    // Several nodes in 2026-07-28 (issue 28): the SDK v2's listen stream on node a hears a
    // change announced through node b; `confirm`'s sealed requestState, got from node a, is
    // retried on node b, which opens it with the key both share.
    Pair {
        flags: &["--state-key", STATE_KEY],
        ..nodes(Ts2, "nodes")
    },
];

/// The key both nodes of the `nodes` pair seal `confirm`'s states with: a test key, on loopback.
const STATE_KEY: &str = "6d63702d73747265616d61626c652d687474702d696e7465726f702d6b657921";

impl fmt::Display for Pair {
    /// `ts-client -> echo_server --json-response (json)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let client = match self.client {
            Ours => "our-client",
            Ts => "ts-client",
            Ts2 => "ts2-client",
            Py => "py-client",
            Py1 => "py1-client",
            TsConnect => "ts-client | mcp-gateway connect",
            Everything | PyStdio => unreachable!("a server only"),
        };
        let server = match self.server {
            Ours => "echo_server",
            Ts => "ts-server",
            Ts2 => "ts2-server",
            Py => "py-server",
            Py1 => "py1-server",
            Everything => "mcp-gateway serve -- everything",
            PyStdio => "mcp-gateway serve -- py-stdio",
            TsConnect => unreachable!("a client only"),
        };
        write!(f, "{client} -> {server}")?;
        for flag in self.flags {
            write!(f, " {flag}")?;
        }
        if self.protected {
            write!(f, " --auth-*")?;
        }
        if self.nodes {
            write!(f, " x2 --redis")?;
        }
        write!(f, " ({})", self.scenario)
    }
}

impl Pair {
    /// The client's script, under `interop/`: the SDK's `gateway` script against a server
    /// behind the gateway, its `client` script otherwise.
    pub(super) fn client_script(&self, client: Peer) -> &'static str {
        match (client, self.server.behind_gateway()) {
            (Ts, true) => "ts/gateway.mjs",
            (Ts, false) => "ts/client.mjs",
            (Ts2, true) => "ts2/gateway.mjs",
            (Ts2, false) => "ts2/client.mjs",
            (Py, true) => "py/gateway.py",
            (Py, false) => "py/client.py",
            (Py1, _) => "py1/client.py",
            (TsConnect, _) => "ts/connect.mjs",
            (Ours | Everything | PyStdio, _) => unreachable!("not a script client"),
        }
    }

    /// The pair's directory name for its logs: `ts-client-echo_server-json-response-json`.
    pub(super) fn slug(&self) -> String {
        let name = self.to_string();
        let words: Vec<&str> = name
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|word| !word.is_empty())
            .collect();
        words.join("-")
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;

    #[test]
    fn pairs_are_named_for_the_log() {
        let names: Vec<String> = PAIRS.iter().map(ToString::to_string).collect();
        assert_eq!(names[0], "ts-client -> echo_server (full)");
        assert!(names.contains(&"py-client -> echo_server --json-response (json)".to_string()));
        assert!(names.contains(&"py-client -> echo_server (modern)".to_string()));
        assert!(names.contains(&"py-client -> echo_server (auto)".to_string()));
        assert!(names.contains(&"ts2-client -> echo_server (auto)".to_string()));
        assert!(names.contains(&"our-client -> ts2-server (modern)".to_string()));
        assert!(names.contains(&"py1-client -> echo_server (full)".to_string()));
        for (i, name) in names.iter().enumerate() {
            assert!(!names[i + 1..].contains(name), "{name} twice");
        }
        // interop/py1 has a client only; the gateway peers are one side each.
        assert!(PAIRS.iter().all(|pair| pair.server != Py1));
        assert!(PAIRS.iter().all(|p| !p.client.behind_gateway()));
        assert!(PAIRS.iter().all(|pair| pair.server != TsConnect));
        assert!(
            names.contains(&"ts-client -> mcp-gateway serve -- everything (everything)".into())
        );
        assert!(names.contains(&"ts-client | mcp-gateway connect -> echo_server (connect)".into()));
        assert_eq!(
            pair(Ours, Ts, &["--event-store"], "full").to_string(),
            "our-client -> ts-server --event-store (full)"
        );
        assert_eq!(PAIRS[3].slug(), "ts-client-echo_server-json-response-json");
        let oauth = "ts-client -> echo_server --auth-* (oauth)";
        assert!(names.contains(&oauth.to_string()));
        assert_eq!(
            protected(Ts, "oauth").slug(),
            "ts-client-echo_server-auth-oauth"
        );
    }

    /// A scenario the client script does not know would fail only when the pair runs.
    #[test]
    fn every_scenario_is_one_its_client_knows() {
        let root = crate::project_root();
        for pair in PAIRS {
            let script = match pair.client {
                Ours => "examples/interop_client.rs".to_owned(),
                client => format!("interop/{}", pair.client_script(client)),
            };
            let text = fs::read_to_string(root.join(&script)).unwrap();
            let quoted = [
                format!("'{}'", pair.scenario),
                format!("\"{}\"", pair.scenario),
            ];
            assert!(
                quoted.iter().any(|q| text.contains(q.as_str())),
                "{script} has no scenario {}",
                pair.scenario
            );
        }
    }
}
