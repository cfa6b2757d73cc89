//! Against this project's own server over loopback: what the echo client does, the standalone
//! stream, resumption after the connection is cut mid-stream, and the per-request protocol;
//! each over plain HTTP/1.1, HTTP/2 by prior knowledge, and TLS with HTTP/1.1 or HTTP/2 by ALPN.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use mcp_jsonrpc::{Id, Message, Notification, Request, Response, to_raw_value};
use mcp_streamable_client::{Client, ClientConnection, Family};
use mcp_streamable_server::{
    Config, Families, InMemoryEventStore, ServerConnection, StreamableHttpService,
};
use mcp_transport::{Connection, Outgoing, Sender, Transport};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::over::Wire;
use crate::{connect, handshake, recv, recv_response, send};

/// The server's pings waiting for the client's answer.
type Pings = Arc<Mutex<Vec<(Id, tokio::sync::oneshot::Sender<()>)>>>;

/// A session of the test server: echo, progress, broadcast and ping_client.
async fn app(mut conn: ServerConnection, _parts: http::request::Parts) {
    let sender = conn.sender();
    let pings: Pings = Arc::default();
    while let Ok(Some(message)) = conn.recv().await {
        let request = match message {
            Message::Request(r) => r,
            Message::Response(r) => {
                let mut pings = pings.lock().unwrap();
                if let Some(at) = pings.iter().position(|(id, _)| Some(id) == r.id()) {
                    let _ = pings.remove(at).1.send(());
                }
                continue;
            }
            Message::Notification(_) => continue,
        };
        let (sender, pings) = (sender.clone(), Arc::clone(&pings));
        tokio::spawn(async move {
            let params: Value = request.parse_params().unwrap_or(Value::Null);
            let related = |m: Message| Outgoing::new(m).related_to(request.id.clone());
            let result = match (request.method.as_str(), params["name"].as_str()) {
                ("initialize", _) => {
                    json!({"protocolVersion": params["protocolVersion"], "capabilities": {}, "serverInfo": {"name": "t", "version": "0"}})
                }
                (_, Some("echo")) => json!({"text": params["arguments"]["text"]}),
                (_, Some("progress")) => {
                    let steps = params["arguments"]["steps"].as_u64().unwrap();
                    for step in 1..=steps {
                        let note = Notification::new(
                            "notifications/progress",
                            Some(
                                to_raw_value(&json!({"progressToken": 1, "progress": step}))
                                    .unwrap(),
                            ),
                        );
                        sender.send(related(note.into())).await.unwrap();
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    json!({"text": "done"})
                }
                (_, Some("broadcast")) => {
                    let note = Notification::new(
                        "notifications/message",
                        Some(to_raw_value(&json!({"data": "to all"})).unwrap()),
                    );
                    sender.send(note.into()).await.unwrap();
                    json!({"text": "sent"})
                }
                (_, Some("ping_client")) => {
                    let (tx, rx) = tokio::sync::oneshot::channel();
                    let id = Id::from("server-ping");
                    pings.lock().unwrap().push((id.clone(), tx));
                    sender
                        .send(related(Request::new(id, "ping", None).into()))
                        .await
                        .unwrap();
                    rx.await.unwrap();
                    json!({"text": "pong"})
                }
                _ => json!({}),
            };
            let _ = sender
                .send(Response::success(request.id, to_raw_value(&result).unwrap()).into())
                .await;
        });
    }
}

/// Serves `service` on a loopback port, plain or over TLS as `wire` says (HTTP/1.1 or HTTP/2,
/// whichever the client speaks); returns its address.
pub(crate) async fn serve(service: StreamableHttpService, wire: Wire) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            tcp.set_nodelay(true).unwrap();
            let service = service.clone();
            tokio::spawn(async move {
                let Some(io) = wire.accept(tcp).await else {
                    return;
                };
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(io), service)
                    .await;
            });
        }
    });
    addr
}

fn tool(id: i64, name: &str, arguments: Value) -> Message {
    Request::new(
        id,
        "tools/call",
        Some(to_raw_value(&json!({"name": name, "arguments": arguments})).unwrap()),
    )
    .into()
}

fn result(response: &Response) -> Value {
    serde_json::from_str(response.result().unwrap().get()).unwrap()
}

/// Calls the `progress` tool for `steps` steps as request `id`: each step's notification comes,
/// in order, then the result.
async fn progress(conn: &mut ClientConnection, id: i64, steps: u64) {
    send(conn, tool(id, "progress", json!({ "steps": steps })))
        .await
        .unwrap();
    for step in 1..=steps {
        match recv(conn).await {
            Message::Notification(n) => {
                assert_eq!(n.parse_params::<Value>().unwrap()["progress"], step)
            }
            other => panic!("expected progress, got {other:?}"),
        }
    }
    assert_eq!(result(&recv_response(conn).await)["text"], "done");
}

#[tokio::test]
async fn the_echo_clients_session_against_our_server() {
    for &wire in Wire::ALL {
        let service = StreamableHttpService::new(
            Config::default().event_store(InMemoryEventStore::default()),
            app,
        );
        let addr = serve(service.clone(), wire).await;
        let mut conn = connect(wire.builder(&wire.url(addr))).await;
        handshake(&mut conn).await;
        assert_eq!(conn.protocol_version().as_deref(), Some("2025-06-18"));

        send(&conn, tool(2, "echo", json!({"text": "hi"})))
            .await
            .unwrap();
        assert_eq!(result(&recv_response(&mut conn).await)["text"], "hi");

        progress(&mut conn, 3, 3).await;

        // The server's ping arrives on the tool call's stream; answering it completes the call.
        send(&conn, tool(4, "ping_client", json!({})))
            .await
            .unwrap();
        let Message::Request(ping) = recv(&mut conn).await else {
            panic!("expected the server's ping")
        };
        assert_eq!(ping.method, "ping");
        send(
            &conn,
            Response::success(ping.id, to_raw_value(&json!({})).unwrap()).into(),
        )
        .await
        .unwrap();
        assert_eq!(result(&recv_response(&mut conn).await)["text"], "pong");

        // The standalone stream carries what relates to no request.
        send(&conn, tool(5, "broadcast", json!({}))).await.unwrap();
        let mut got_broadcast = false;
        let mut got_result = false;
        for _ in 0..2 {
            match recv(&mut conn).await {
                Message::Notification(n) if n.method == "notifications/message" => {
                    got_broadcast = true
                }
                Message::Response(r) if r.id() == Some(&Id::from(5)) => got_result = true,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(got_broadcast && got_result);

        assert_eq!(service.session_count(), 1);
        conn.close().await.unwrap();
        assert_eq!(service.session_count(), 0, "close sent DELETE");
    }
}

/// A TCP proxy whose connections can all be cut at once.
struct Proxy {
    addr: std::net::SocketAddr,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    accepted: Arc<std::sync::atomic::AtomicUsize>,
}

impl Proxy {
    async fn start(target: std::net::SocketAddr) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let accepted: Arc<std::sync::atomic::AtomicUsize> = Arc::default();
        let (tracked, counter) = (Arc::clone(&connections), Arc::clone(&accepted));
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    return;
                };
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let task = tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(target).await else {
                        return;
                    };
                    let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                });
                tracked.lock().unwrap().push(task);
            }
        });
        Proxy {
            addr,
            connections,
            accepted,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Drops every connection open now, as a network failure would.
    fn cut(&self) {
        for task in self.connections.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test]
async fn a_stream_cut_mid_way_resumes_with_every_message_once_in_order() {
    for &wire in Wire::ALL {
        let service = StreamableHttpService::new(
            Config::default().event_store(InMemoryEventStore::default()),
            app,
        );
        let proxy = Proxy::start(serve(service, wire).await).await;
        let mut conn = connect(wire.builder(&wire.url(proxy.addr)).standalone_stream(false)).await;
        handshake(&mut conn).await;

        const STEPS: u64 = 12;
        send(&conn, tool(2, "progress", json!({"steps": STEPS})))
            .await
            .unwrap();
        let mut seen = Vec::new();
        let mut accepted_at_cut = 0;
        loop {
            match recv(&mut conn).await {
                Message::Notification(n) => {
                    seen.push(
                        n.parse_params::<Value>().unwrap()["progress"]
                            .as_u64()
                            .unwrap(),
                    );
                    if seen.len() == 3 {
                        accepted_at_cut = proxy.accepted();
                        proxy.cut();
                    }
                }
                Message::Response(r) => {
                    assert_eq!(result(&r)["text"], "done");
                    break;
                }
                Message::Request(r) => panic!("unexpected request {r:?}"),
            }
        }
        assert_eq!(
            seen,
            (1..=STEPS).collect::<Vec<_>>(),
            "every message once, in order"
        );
        assert!(
            proxy.accepted() > accepted_at_cut,
            "the client reconnected after the cut"
        );
    }
}

/// Serves [`app`] under `config` over `wire`, and makes its first request the `echo` tool
/// (family `Auto`, so that the request finds out what the server speaks): the service, the
/// client and the connection.
async fn echo_first(
    config: Config,
    wire: Wire,
) -> (StreamableHttpService, Client, ClientConnection) {
    let service = StreamableHttpService::new(config, app);
    let addr = serve(service.clone(), wire).await;
    let client = wire.builder(&wire.url(addr)).build().unwrap();
    let mut conn = client.clone().connect().await.unwrap();
    send(&conn, tool(2, "echo", json!({"text": "hi"})))
        .await
        .unwrap();
    assert_eq!(
        result(&recv_response(&mut conn).await)["text"],
        "hi",
        "{wire:?}"
    );
    (service, client, conn)
}

#[tokio::test]
async fn m7_our_dual_era_server_is_spoken_to_per_request() {
    for &wire in Wire::ALL {
        let (service, client, mut conn) = echo_first(Config::default(), wire).await;
        assert_eq!(client.family(), Some(Family::PerRequest));
        // A name sent base64-encoded is decoded and matched by the server.
        send(&conn, tool(3, "écho", json!({}))).await.unwrap();
        let response = recv_response(&mut conn).await;
        assert!(!response.is_error(), "{response:?}");
        progress(&mut conn, 4, 2).await;
        assert_eq!(service.session_count(), 0);
        assert_eq!(conn.session_id(), None);
        conn.close().await.unwrap();
    }
}

#[tokio::test]
async fn m7_our_session_only_server_gets_a_session_from_auto() {
    for &wire in Wire::ALL {
        let config = Config::default().families(Families::SessionOnly);
        let (service, client, mut conn) = echo_first(config, wire).await;
        assert_eq!(client.family(), Some(Family::Session));
        assert!(conn.session_id().is_some());
        assert_eq!(service.session_count(), 1);
        conn.close().await.unwrap();
        assert_eq!(service.session_count(), 0, "close sent DELETE");
    }
}
