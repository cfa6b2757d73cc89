//! The gateway served in-process on a loopback port the OS picks, its clients, and bounded
//! waits.

use std::future::Future;
use std::time::Duration;

use mcp_gateway::{Command, Gateway, Options};
use mcp_jsonrpc::{Message, Request, Response, to_raw_value};
use mcp_streamable_client::{Client, ClientConnection, Family};
use mcp_streamable_server::{Config, serve};
use mcp_transport::{Connection, Sender, Transport};
use serde_json::{Value, json};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The test child.
pub(crate) const CHILD: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/children/server.py");

/// How long any one await may take before the test fails instead of hanging: generous, as
/// each session starts a Python process on a busy machine.
pub(crate) const LIMIT: Duration = Duration::from_secs(20);

/// Awaits `f`, failing the test if it takes longer than [`LIMIT`].
pub(crate) async fn within<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f).await.expect("timed out")
}

/// The test child in `mode`.
pub(crate) fn child(mode: &str) -> Command {
    Command::new("python3").arg(CHILD).arg(mode)
}

/// Options for tests: one pool child, a short grace.
pub(crate) fn options() -> Options {
    Options::default()
        .pool_size(1)
        .stop_grace(Duration::from_secs(2))
}

/// A gateway serving on loopback.
pub(crate) struct Running {
    pub(crate) url: String,
    pub(crate) gateway: Gateway,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Running {
    /// Serves `command` with `options` and `config`.
    pub(crate) async fn start(command: Command, options: Options, config: Config) -> Running {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let gateway = Gateway::new(command, options);
        let service = gateway.service(config);
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let shutdown = async {
                let _ = stopped.await;
            };
            serve::Options::default()
                .path("/mcp")
                .shutdown_grace(Duration::from_secs(1))
                .serve(listener, service, shutdown)
                .await;
        });
        Running {
            url,
            gateway,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The test child in `mode` with [`options`] and the default config.
    pub(crate) async fn child(mode: &str) -> Running {
        Running::start(child(mode), options(), Config::default()).await
    }

    /// Shuts the server down and stops every child.
    pub(crate) async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            within(task).await.unwrap();
        }
        within(self.gateway.stop()).await;
        assert_eq!(self.gateway.children(), 0);
    }
}

/// A connection of `family` to `url`.
pub(crate) async fn connect(url: &str, family: Family) -> ClientConnection {
    let client = Client::builder(url)
        .family(family)
        .request_timeout(LIMIT)
        .close_timeout(Duration::from_secs(2))
        .client_info("gateway-it", "0")
        .build()
        .unwrap();
    within(client.connect()).await.unwrap()
}

/// A session started: `initialize` answered, `notifications/initialized` sent.
pub(crate) async fn session(url: &str) -> (ClientConnection, Response) {
    let mut conn = connect(url, Family::Session).await;
    let init = initialize(&mut conn).await;
    (conn, init)
}

/// An `initialize` of the 2025-06-18 revision, declaring sampling.
pub(crate) fn initialize_request() -> Request {
    let params = json!({
        "protocolVersion": "2025-06-18",
        "capabilities": {"sampling": {}},
        "clientInfo": {"name": "gateway-it", "version": "0"},
    });
    Request::new(0, "initialize", to_raw_value(&params).ok())
}

/// Sends `initialize` on `conn` and returns its answer; `notifications/initialized` follows a
/// success.
pub(crate) async fn initialize(conn: &mut ClientConnection) -> Response {
    let (response, _) = ask(conn, initialize_request()).await;
    if !response.is_error() {
        let initialized = mcp_jsonrpc::Notification::new("notifications/initialized", None);
        within(conn.sender().send(initialized.into()))
            .await
            .unwrap();
    }
    response
}

/// A `tools/call` request of tool `name`.
pub(crate) fn tool(id: i64, name: &str, arguments: Value) -> Request {
    let params = json!({"name": name, "arguments": arguments});
    Request::new(id, "tools/call", to_raw_value(&params).ok())
}

/// Sends `request` and reads until its response; the other messages read meanwhile too.
pub(crate) async fn ask(conn: &mut ClientConnection, request: Request) -> (Response, Vec<Message>) {
    let id = request.id.clone();
    within(conn.sender().send(request.into())).await.unwrap();
    response_to(conn, &id).await
}

/// Reads until the response to `id` (at most 1,000 messages); the others read meanwhile too.
pub(crate) async fn response_to(
    conn: &mut ClientConnection,
    id: &mcp_jsonrpc::Id,
) -> (Response, Vec<Message>) {
    let mut others = Vec::new();
    for _ in 0..1_000 {
        match within(conn.recv()).await.unwrap() {
            Some(Message::Response(response)) if response.id() == Some(id) => {
                return (response, others);
            }
            Some(other) => others.push(other),
            None => panic!("the connection ended before the response to {id:?}"),
        }
    }
    panic!("no response to {id:?} in 1,000 messages")
}

/// Reads until the responses to every request of `ids`, in whichever order they come (at most
/// 1,000 messages); returns them in the order of `ids`.
pub(crate) async fn responses_to(conn: &mut ClientConnection, ids: &[i64]) -> Vec<Response> {
    let mut answered: Vec<Option<Response>> = vec![None; ids.len()];
    for _ in 0..1_000 {
        if answered.iter().all(Option::is_some) {
            return answered.into_iter().flatten().collect();
        }
        match within(conn.recv()).await.unwrap() {
            Some(Message::Response(response)) => {
                let at = ids
                    .iter()
                    .position(|id| response.id() == Some(&(*id).into()));
                if let Some(at) = at {
                    answered[at] = Some(response);
                }
            }
            Some(_) => {}
            None => panic!("the connection ended before the responses to {ids:?}"),
        }
    }
    panic!("no responses to {ids:?} in 1,000 messages")
}

/// The result of a successful response, as JSON.
pub(crate) fn result(response: &Response) -> Value {
    let raw = response.result().expect("a successful response");
    serde_json::from_str(raw.get()).unwrap()
}

/// The text of a tool result.
pub(crate) fn text(response: &Response) -> String {
    result(response)["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The message of an error response.
pub(crate) fn error_message(response: &Response) -> String {
    response
        .result()
        .expect_err("an error response")
        .message
        .clone()
}

/// The process id the child of `conn` reports.
pub(crate) async fn child_pid(conn: &mut ClientConnection, id: i64) -> i32 {
    let (response, _) = ask(conn, tool(id, "pid", json!({}))).await;
    text(&response).parse().unwrap()
}

/// Whether process `pid` exists (a zombie counts: it was not reaped).
pub(crate) fn alive(pid: i32) -> bool {
    let pid = rustix::process::Pid::from_raw(pid).unwrap();
    rustix::process::test_kill_process(pid).is_ok()
}

/// Waits until `done` holds, checking every 100 ms, at most 300 times.
pub(crate) async fn until(mut done: impl FnMut() -> bool) {
    for _ in 0..300 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the condition did not hold within 30 s");
}
