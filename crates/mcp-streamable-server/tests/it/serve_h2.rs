//! S24 over HTTP/2: paced rapid resets, which h2's own counters let through, close the
//! connection with `GOAWAY` once the peer is over its reset budget; and an idle HTTP/2
//! connection is closed. A good session is served during and after.

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use mcp_streamable_server::serve::Options;
use tokio::net::TcpStream;

use crate::harness::{ACCEPT_BOTH, WAIT};
use crate::serve::{good_session, start};

/// Streams opened in a batch before they are reset: ten per "round trip", as in the attack
/// the issue measured.
const BATCH: usize = 10;

/// The most streams the test opens on one connection.
const MAX_STREAMS: usize = 3_000;

/// How an attacking connection ended.
#[derive(Debug, PartialEq)]
enum Outcome {
    /// The server closed the connection (with `GOAWAY`) after this many streams.
    GoAway(usize),
    /// Every stream was opened and reset, and the connection is still up.
    StillOpen,
}

/// Opens streams on one HTTP/2 connection in batches of `BATCH`, and resets each batch after
/// a PING round trip, once the server has accepted its streams: paced so, the resets stay
/// under h2's count of streams reset before they were accepted.
async fn paced_resets(addr: std::net::SocketAddr, uri: &str) -> Outcome {
    let tcp = TcpStream::connect(addr).await.unwrap();
    let (mut client, mut connection) = h2::client::handshake(tcp).await.unwrap();
    let mut ping_pong = connection.ping_pong().unwrap();
    let mut connection = tokio::spawn(connection);
    let mut opened = 0;
    while opened < MAX_STREAMS {
        let mut batch = Vec::with_capacity(BATCH);
        for _ in 0..BATCH {
            // A POST the service takes up and waits on: its body never comes.
            let request = Request::post(uri)
                .header("accept", ACCEPT_BOTH)
                .header("content-type", "application/json")
                .body(())
                .unwrap();
            client = match client.ready().await {
                Ok(ready) => ready,
                Err(_) => return closed(connection, opened).await,
            };
            match client.send_request(request, false) {
                Ok((_, send)) => batch.push(send),
                Err(_) => return closed(connection, opened).await,
            }
            opened += 1;
        }
        // A round trip: the server has read the batch, and started serving it.
        if ping_pong.ping(h2::Ping::opaque()).await.is_err() {
            return closed(connection, opened).await;
        }
        for mut send in batch {
            send.send_reset(h2::Reason::CANCEL);
        }
    }
    let still_open = tokio::time::timeout(Duration::from_millis(1), &mut connection).await;
    assert!(still_open.is_err(), "{still_open:?}");
    connection.abort();
    Outcome::StillOpen
}

/// How a connection the server closed ended, after `opened` streams: cleanly (hyper's graceful
/// shutdown sends `GOAWAY`, then closes once the streams are over), or with h2's `GOAWAY`
/// error; not with an I/O error in the middle of a frame.
async fn closed(
    connection: tokio::task::JoinHandle<Result<(), h2::Error>>,
    opened: usize,
) -> Outcome {
    let ended = tokio::time::timeout(WAIT, connection).await;
    match ended.expect("the connection ends").unwrap() {
        Ok(()) => Outcome::GoAway(opened),
        Err(err) if err.is_go_away() => Outcome::GoAway(opened),
        Err(err) => panic!("the connection ended without GOAWAY: {err}"),
    }
}

/// Real time: on tokio's paused clock, the clock jumps ahead whenever the runtime waits for
/// the loopback, which refills the budget. h2's own counter of streams reset before they were
/// accepted is raised out of the way in both runs, so that only the budget can stop them.
#[tokio::test]
async fn s24_paced_rapid_resets_are_stopped_with_goaway() {
    let options = Options::default().h2_max_pending_accept_reset_streams(100_000);
    // Without a budget to speak of, every paced reset goes through: the attack works.
    let unguarded = start(options.clone().max_reset_rate(u32::MAX)).await;
    let outcome = paced_resets(unguarded.addr, &unguarded.uri()).await;
    assert_eq!(outcome, Outcome::StillOpen);
    unguarded.stop().await;

    // With one (10 a second, 20 at once, so that even a slow machine outruns it), the
    // connection is closed soon after the burst.
    let server = start(options.max_reset_rate(10)).await;
    let uri = server.uri();
    let attack = tokio::spawn({
        let (addr, uri) = (server.addr, uri.clone());
        async move { paced_resets(addr, &uri).await }
    });
    good_session(&uri).await;
    match attack.await.unwrap() {
        Outcome::GoAway(opened) => assert!(opened < MAX_STREAMS, "{opened}"),
        Outcome::StillOpen => panic!("the paced resets ran {MAX_STREAMS} streams"),
    }
    good_session(&uri).await;
    server.stop().await;
}

#[tokio::test(start_paused = true)]
async fn s24_idle_http2_connections_are_closed() {
    let server = start(Options::default().path("/mcp")).await;
    let tcp = TcpStream::connect(server.addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let other = format!("http://{}/other", server.addr);
    let (response, _) = client
        .send_request(Request::get(other).body(()).unwrap(), true)
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk: Bytes = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    // Nothing more: the server sends GOAWAY once the idle timeout passed, and the connection
    // ends cleanly.
    good_session(&server.uri()).await;
    let ended = tokio::time::timeout(WAIT * 4, connection).await;
    assert!(ended.is_ok(), "an idle HTTP/2 connection is still open");
    ended.unwrap().unwrap().unwrap();
    good_session(&server.uri()).await;
    server.stop().await;
}
