use std::time::Duration;

use mcp_jsonrpc::{Id, Message};
use mcp_transport::{Connection, ErrorKind, Outgoing, Sender, memory};

use crate::{note, request};

#[tokio::test]
async fn messages_flow_both_ways_in_order() {
    let (mut a, mut b) = memory::pair();
    let (sa, sb) = (a.sender(), b.sender());
    for i in 0..10 {
        sa.send(request(i).into()).await.unwrap();
    }
    sb.send(note("back").into()).await.unwrap();
    for i in 0..10 {
        assert_eq!(b.recv().await.unwrap(), Some(request(i)));
    }
    assert_eq!(a.recv().await.unwrap(), Some(note("back")));
}

#[tokio::test]
async fn close_delivers_what_was_in_flight_then_ends_the_peer() {
    let (mut a, mut b) = memory::pair();
    let sender = a.sender();
    sender.send(note("one").into()).await.unwrap();
    sender.send(note("two").into()).await.unwrap();
    a.close().await.unwrap();
    assert_eq!(b.recv().await.unwrap(), Some(note("one")));
    assert_eq!(b.recv().await.unwrap(), Some(note("two")));
    assert_eq!(b.recv().await.unwrap(), None);
    // Closing again is harmless, and recv stays at the end.
    a.close().await.unwrap();
    assert_eq!(a.recv().await.unwrap(), None);
}

#[tokio::test]
async fn sends_after_close_fail_on_both_sides() {
    let (mut a, b) = memory::pair();
    let (sa, sb) = (a.sender(), b.sender());
    a.close().await.unwrap();
    assert!(sa.is_closed());
    let err = sa.send(note("late").into()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Closed);
    // The peer can no longer reach us either.
    assert!(sb.is_closed());
    assert!(sb.send(note("late").into()).await.unwrap_err().is_closed());
}

#[tokio::test]
async fn dropping_a_connection_closes_it() {
    let (a, mut b) = memory::pair();
    let sender = a.sender();
    drop(a);
    assert_eq!(b.recv().await.unwrap(), None);
    assert!(
        sender
            .send(note("late").into())
            .await
            .unwrap_err()
            .is_closed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_full_buffer_makes_the_sender_wait_and_nothing_is_lost() {
    let (a, mut b) = memory::pair_with_capacity(2);
    let sender = a.sender();
    sender.send(request(1).into()).await.unwrap();
    sender.send(request(2).into()).await.unwrap();
    // The third send waits for room: it does not complete while nobody reads.
    let third = tokio::time::timeout(Duration::from_millis(20), sender.send(request(3).into()));
    assert!(third.await.is_err(), "a send into a full buffer completed");
    assert_eq!(b.recv().await.unwrap(), Some(request(1)));
    sender.send(request(3).into()).await.unwrap();
    assert_eq!(b.recv().await.unwrap(), Some(request(2)));
    assert_eq!(b.recv().await.unwrap(), Some(request(3)));
}

#[tokio::test]
async fn clones_send_concurrently_from_many_tasks() {
    let (a, mut b) = memory::pair_with_capacity(4);
    let mut tasks = Vec::new();
    for t in 0..8i64 {
        let sender = a.sender();
        tasks.push(tokio::spawn(async move {
            for i in 0..50 {
                sender.send(request(t * 1000 + i).into()).await.unwrap();
            }
        }));
    }
    let mut seen = Vec::new();
    for _ in 0..400 {
        match b.recv().await.unwrap() {
            Some(Message::Request(r)) => seen.push(r.id),
            other => panic!("unexpected {other:?}"),
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    // Each task's messages arrive in its own order, none lost or doubled.
    for t in 0..8i64 {
        let mine: Vec<_> = seen
            .iter()
            .filter_map(|id| match id {
                Id::Number(n) if n / 1000 == t => Some(*n),
                _ => None,
            })
            .collect();
        assert_eq!(mine, (0..50).map(|i| t * 1000 + i).collect::<Vec<_>>());
    }
}

#[tokio::test(start_paused = true)]
async fn recv_is_cancel_safe() {
    let (a, mut b) = memory::pair();
    // A recv abandoned before anything arrived loses nothing.
    let early = tokio::time::timeout(Duration::from_millis(5), b.recv()).await;
    assert!(early.is_err());
    a.sender().send(note("after").into()).await.unwrap();
    assert_eq!(b.recv().await.unwrap(), Some(note("after")));
}

#[tokio::test]
async fn the_relation_is_ignored_by_a_single_stream_transport() {
    let (a, mut b) = memory::pair();
    let out = Outgoing::new(note("progress")).related_to(Id::from(9));
    a.sender().send(out).await.unwrap();
    assert_eq!(b.recv().await.unwrap(), Some(note("progress")));
}
