use mcp_transport::{BoxConnection, BoxSender, Connection, Sender, memory};

use crate::note;

#[tokio::test]
async fn boxed_connections_keep_the_contract() {
    let (a, b) = memory::pair();
    let mut a: BoxConnection = a.boxed();
    let mut b: BoxConnection = b.boxed();
    let sender: BoxSender = a.sender();
    let clone = sender.clone();
    clone.send(note("hi").into()).await.unwrap();
    assert_eq!(b.recv().await.unwrap(), Some(note("hi")));
    a.close().await.unwrap();
    assert!(sender.is_closed());
    assert!(
        sender
            .send(note("late").into())
            .await
            .unwrap_err()
            .is_closed()
    );
    assert_eq!(b.recv().await.unwrap(), None);
}

#[tokio::test]
async fn boxing_twice_does_not_wrap_again() {
    let (a, _b) = memory::pair();
    let boxed = a.boxed().boxed();
    assert!(format!("{boxed:?}").starts_with("BoxConnection"));
}

#[test]
fn a_box_sender_wraps_any_sender() {
    let (a, _b) = memory::pair();
    let boxed = BoxSender::new(a.sender());
    assert!(!boxed.is_closed());
}
