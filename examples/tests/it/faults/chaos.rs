//! A chaos run: three nodes behind a balancer without affinity, clients calling through it
//! all along, while one node is killed (SIGKILL) and started again under its name, another is
//! paused past its lease (SIGSTOP, then SIGCONT), the connections between the nodes are cut,
//! Redis stalls for less than a lease, and Redis restarts without its data. Every call is
//! answered once or refused, every event a client sees arrives once, no call runs twice, and
//! no live holder's session is taken over while the nodes only lost each other or Redis
//! stalled.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_streamable_redis::testing::RedisServer;
use serde_json::json;

use super::http::{Answer, call_within, initialize, request, resume};
use super::{Cutter, PAST_THE_LEASE, Scratch, start_behind};
use support::proxy::RoundRobin;

/// How long one call may take, faults and all.
const CALL: Duration = Duration::from_secs(20);

/// One client's record: each call's key and what came back.
type Calls = Vec<(String, Answer)>;

/// A client calling through `addr` until `stop`: `count` (each key once) and `progress`,
/// starting a new session when its own is gone (Redis lost it).
async fn client(addr: SocketAddr, name: usize, stop: Arc<AtomicBool>) -> Calls {
    let mut calls = Vec::new();
    let mut sid = start(addr).await;
    let mut id = 0;
    while !stop.load(Ordering::Acquire) && id < 400 {
        id += 1;
        let key = format!("c{name}-{id}");
        let (tool, arguments) = if id % 2 == 0 {
            ("count", json!({"key": key, "delay_ms": 50}))
        } else {
            ("progress", json!({"steps": 4, "delay_ms": 25}))
        };
        let answer = call_within(addr, &sid, id, tool, arguments, CALL).await;
        let answer = resumed(addr, &sid, id, answer).await;
        let gone = answer.status == 404;
        calls.push((key, answer));
        if gone {
            sid = start(addr).await;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    calls
}

/// `answer` and, while its stream ended before the response to request `id` came, what a
/// client resuming it (`Last-Event-ID`, through any node) gets, as one answer.
async fn resumed(addr: SocketAddr, sid: &str, id: u64, mut answer: Answer) -> Answer {
    for _ in 0..10 {
        if answer.status != 200 || !answer.ended || answer.response(id).is_some() {
            return answer;
        }
        let Some(last) = answer.last_event_id() else {
            return answer;
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        let more = resume(addr, sid, &last, CALL).await;
        if more.status != 200 {
            // Refused (the session is gone): as actionable as a refused call.
            answer.status = more.status;
            return answer;
        }
        answer.body.push_str(&more.body);
        answer.ended = more.ended;
    }
    answer
}

/// A new session through `addr`, trying again while the nodes refuse (Redis away).
async fn start(addr: SocketAddr) -> String {
    for _ in 0..200 {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "chaos", "version": "0"}}});
        let answer = request(addr, "POST", &[], &init.to_string(), CALL).await;
        if answer.status == 200 {
            return initialize_rest(addr, &answer).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    initialize(addr).await
}

async fn initialize_rest(addr: SocketAddr, answer: &Answer) -> String {
    let sid = answer
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let headers = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    request(addr, "POST", &headers, &initialized.to_string(), CALL).await;
    sid
}

/// Every session's holding as Redis has it: its id, and its node, incarnation and generation.
fn holdings(redis: &RedisServer) -> BTreeMap<String, String> {
    let cli = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args(["-p", &redis.port().to_string()])
            .args(args)
            .output()
            .expect("redis-cli runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    cli(&["--scan", "--pattern", "mcp:{*}"])
        .lines()
        .filter(|k| !k.starts_with("mcp:{m}") && k.ends_with('}'))
        .map(|key| {
            let holding = cli(&["hmget", key, "node", "inc", "gen"]).replace('\n', " ");
            (key.to_owned(), holding)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_through_faults_lose_and_repeat_nothing() {
    let scratch = Scratch::new("chaos");
    let mut redis = RedisServer::start().expect("redis-server starts");
    let url = redis.url();
    let mut nodes = Vec::new();
    let mut cutters = Vec::new();
    for name in ["a", "b", "c"] {
        let cutter = Cutter::start().await;
        nodes.push(start_behind(scratch.path(), &url, name, &cutter, &[]));
        cutters.push(cutter);
    }
    let (proxy, addr) = RoundRobin::start(nodes.iter().map(|n| n.addr).collect()).await;
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..6)
        .map(|name| tokio::spawn(client(addr, name, Arc::clone(&stop))))
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;

    // kill -9 of a, started again at once under its name, behind the same cutter: it listens
    // on a port of its own, and its peers reach it at the address they reached a at before;
    // the balancer sends its clients' share to the new port.
    nodes[0].kill();
    let restarted = start_behind(scratch.path(), &url, "a", &cutters[0], &[]);
    proxy.replace(nodes[0].addr, restarted.addr);
    drop(std::mem::replace(&mut nodes[0], restarted));
    tokio::time::sleep(Duration::from_secs(1)).await;

    // b paused past its lease, then resumed.
    nodes[1].pause();
    tokio::time::sleep(PAST_THE_LEASE).await;
    nodes[1].resume();
    tokio::time::sleep(Duration::from_secs(2)).await;

    // Every node alive from here on: the nodes lose each other, then Redis stalls; nobody may
    // take a live holder's session over.
    let before = holdings(&redis);
    for cutter in &cutters {
        cutter.cut();
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let port = redis.port().to_string();
    let stall = std::process::Command::new("redis-cli")
        .args(["-p", &port, "debug", "sleep", "0.3"])
        .output()
        .expect("redis-cli runs");
    assert!(stall.status.success());
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = holdings(&redis);
    let taken: Vec<_> = before
        .iter()
        .filter(|(key, holding)| after.get(*key).is_some_and(|now| now != *holding))
        .collect();
    assert!(
        taken.is_empty(),
        "live holders taken over: {taken:?} (now {after:?})"
    );

    // Redis restarted without its data: the sessions are gone, the clients start new ones.
    redis.restart().expect("redis-server restarts");
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, Ordering::Release);

    let mut calls = Vec::new();
    for client in clients {
        calls.extend(client.await.unwrap());
    }
    // Once every call is over: what ran, and how often.
    let mut runs: HashMap<String, usize> = HashMap::new();
    for node in &nodes {
        for key in node.executions() {
            *runs.entry(key).or_default() += 1;
        }
    }
    let mut answered = 0;
    for (key, answer) in &calls {
        check(key, answer, &runs);
        answered += usize::from(answer.status == 200);
    }
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "calls ran more than once: {twice:?}");
    assert!(answered > 50, "only {answered} calls were answered");
    let served = proxy.passed(nodes[0].addr);
    assert!(
        served > 0,
        "the balancer sent nothing to a once it was started again"
    );
}

/// One call: answered once or refused, its progress once each and in order, and a `count`
/// that came back with a result ran once.
fn check(key: &str, answer: &Answer, runs: &HashMap<String, usize>) {
    assert!(answer.ended, "{key} was left unanswered: {answer:?}");
    if answer.status != 200 {
        // Refused before anything ran (404 once Redis forgot the session, 503 while it was
        // away): a JSON-RPC error the client can act on.
        assert!(answer.status >= 400, "{key}: {answer:?}");
        return;
    }
    let messages = answer.messages();
    let responses = messages
        .iter()
        .filter(|m| m.get("result").is_some() || m.get("error").is_some())
        .count();
    assert_eq!(responses, 1, "{key}: {responses} answers: {answer:?}");
    let progress: Vec<u64> = messages
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .filter_map(|m| m["params"]["progress"].as_u64())
        .collect();
    let expected: Vec<u64> = (1..=progress.len() as u64).collect();
    assert_eq!(progress, expected, "{key}: every event once, in order");
    let succeeded = messages.iter().any(|m| m.get("result").is_some());
    let counted = messages.iter().any(|m| {
        m["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|t| t.parse::<u32>().is_ok())
    });
    if succeeded && counted {
        assert_eq!(
            runs.get(key),
            Some(&1),
            "{key} answered, yet ran {:?} times",
            runs.get(key)
        );
    }
}
