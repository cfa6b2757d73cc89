//! The `Cluster` on Redis and on a Redis Cluster: holders, fences, takeovers, incarnations.

use bytes::Bytes;
use mcp_streamable_redis::RedisBackend;
use mcp_streamable_server::{
    Cluster, EventStore, Fence, Holder, Location, NotHolder, SessionRecord, SessionStore, TakeOver,
    Write,
};

use crate::support::{LEASE, PATIENCE, POLL, Redis, eventually, on_both, options};

async fn start(backend: &RedisBackend, id: &str) -> Fence {
    let record = SessionRecord::new(id, Bytes::from_static(b"{}"), None);
    backend.cluster().start(&record).await.unwrap()
}

/// Takes `session` over from what `from` says, waiting out a lapse or the records' quiet:
/// what it came to.
async fn take_over(backend: &RedisBackend, session: &str, from: &Location) -> TakeOver {
    let tries = PATIENCE.as_millis() / POLL.as_millis();
    for _ in 0..tries {
        match backend.cluster().take_over(session, from).await.unwrap() {
            TakeOver::Alive(_) | TakeOver::Wait(_) => tokio::time::sleep(POLL).await,
            other => return other,
        }
    }
    panic!("{session} was not taken over within {PATIENCE:?}");
}

async fn the_holder_is_known_to_every_node(redis: Redis) {
    let a = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    let fence = start(&a, "s").await;
    assert_eq!(fence.generation, 0);
    assert_eq!(fence.incarnation, a.cluster().lease().incarnation());
    let location = b.cluster().locate("s").await.unwrap();
    assert_eq!(location, Location::Held(Holder::new("a", fence)));
    assert_eq!(
        b.cluster().locate("nobody").await.unwrap(),
        Location::Unknown
    );
    // The membership names a, alive, where it listens.
    let member = b.cluster().member("a").expect("a is a member");
    assert_eq!(member.incarnation, fence.incarnation);
    assert_eq!(member.address, a.address());
    // Nothing advertised: it is reached where it listens.
    assert_eq!(a.address(), a.peer_addr());
    // Alive: nobody takes its sessions over.
    assert!(matches!(
        b.cluster().take_over("s", &location).await.unwrap(),
        TakeOver::Alive(_) | TakeOver::Wait(_)
    ));
}
on_both!(the_holder_is_known_to_every_node);

async fn an_advertised_ip_without_a_port_is_reached_on_the_port_bound(redis: Redis) {
    // A pod's IP, of either family, given alone: the port is the one the node listens on.
    let pod = std::net::Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 7);
    let advertised = std::net::SocketAddr::new(pod.into(), 0);
    let a = redis.node("a", options().advertise(advertised)).await;
    let b = redis.node("b", options()).await;
    assert_eq!(a.address().ip(), advertised.ip());
    assert_ne!(a.address().port(), 0);
    // What it listens on: the loopback of the default peer address, on that port.
    assert_eq!(a.peer_addr(), ([127, 0, 0, 1], a.address().port()).into());
    let bound = std::net::TcpStream::connect(a.peer_addr());
    assert!(bound.is_ok(), "a listens on the port it advertises");
    start(&a, "s").await;
    let member = b.cluster().member("a").expect("a is a member");
    assert_eq!(member.address, a.address());
}
on_both!(an_advertised_ip_without_a_port_is_reached_on_the_port_bound);

async fn a_lapsed_holder_is_taken_over_once_with_a_new_generation(redis: Redis) {
    let a = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    let c = redis.node("c", options()).await;
    start(&a, "s").await;
    let location = b.cluster().locate("s").await.unwrap();
    drop(a);
    let TakeOver::Taken(fence) = take_over(&b, "s", &location).await else {
        panic!("not taken");
    };
    assert_eq!(fence.generation, 1);
    assert_eq!(
        c.cluster().locate("s").await.unwrap(),
        Location::Held(Holder::new("b", fence))
    );
    // The race is decided: whoever read the old holder finds the records moved on.
    assert_eq!(
        c.cluster().take_over("s", &location).await.unwrap(),
        TakeOver::Moved
    );
}
on_both!(a_lapsed_holder_is_taken_over_once_with_a_new_generation);

async fn of_two_nodes_racing_for_a_lapsed_session_exactly_one_wins(redis: Redis) {
    let a = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    let c = redis.node("c", options()).await;
    for i in 0..20 {
        start(&a, &format!("s{i}")).await;
    }
    let location = |i: usize| {
        let b = b.clone();
        async move { b.cluster().locate(&format!("s{i}")).await.unwrap() }
    };
    let mut locations = Vec::new();
    for i in 0..20 {
        locations.push(location(i).await);
    }
    drop(a);
    // Once a is gone from the membership and the quiet is over, both race for each.
    take_over(&b, "s0", &locations[0]).await;
    let (bc, cc) = (b.cluster(), c.cluster());
    for (i, from) in locations.iter().enumerate().skip(1) {
        let id = format!("s{i}");
        let (by_b, by_c) = tokio::join!(bc.take_over(&id, from), cc.take_over(&id, from));
        let won = [by_b.unwrap(), by_c.unwrap()]
            .iter()
            .filter(|t| matches!(t, TakeOver::Taken(_)))
            .count();
        assert_eq!(won, 1, "{id}");
    }
}
on_both!(of_two_nodes_racing_for_a_lapsed_session_exactly_one_wins);

async fn a_handed_over_session_is_taken_over_at_once(redis: Redis) {
    let a = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    let fence = start(&a, "s").await;
    a.cluster().hand_over("s", fence).await;
    let free = b.cluster().locate("s").await.unwrap();
    assert_eq!(free, Location::Free { generation: 0 });
    let taken = b.cluster().take_over("s", &free).await.unwrap();
    assert!(
        matches!(taken, TakeOver::Taken(f) if f.generation == 1),
        "{taken:?}"
    );
}
on_both!(a_handed_over_session_is_taken_over_at_once);

/// A holder whose session was taken over behind its back (it was paused past its lease) writes
/// and deletes nothing of it any more: its fence is not the holding.
async fn a_stale_holder_changes_nothing(redis: Redis) {
    let a = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    let stale = start(&a, "s").await;
    // b takes it over: swapped in the records as a takeover after a's lapse would.
    let b_fence = force_take_over(&redis, "s", "b", b.cluster().lease().incarnation()).await;
    let refused = a
        .event_store()
        .write("s", Some(stale), &[Write::Finish { stream: 1 }])
        .await
        .unwrap_err();
    assert!(refused.downcast_ref::<NotHolder>().is_some());
    let refused = a
        .session_store()
        .touch("s", Some(stale), std::time::SystemTime::now())
        .await
        .unwrap_err();
    assert!(refused.downcast_ref::<NotHolder>().is_some());
    a.cluster().end("s", stale).await;
    a.cluster().hand_over("s", stale).await;
    assert_eq!(a.cluster().reclaim("s", stale).await.unwrap(), None);
    assert_eq!(
        b.cluster().locate("s").await.unwrap(),
        Location::Held(Holder::new("b", b_fence)),
        "nothing of the live holding changed"
    );
    b.cluster().end("s", b_fence).await;
    assert_eq!(b.cluster().locate("s").await.unwrap(), Location::Unknown);
}
on_both!(a_stale_holder_changes_nothing);

/// Swaps the holder as a takeover does, whatever the membership says (a test's stand-in for a
/// lapse the test cannot wait for).
async fn force_take_over(redis: &Redis, session: &str, node: &str, incarnation: u64) -> Fence {
    let key = format!("t:{{{session}}}");
    let generation: u64 = redis
        .cli(&["hincrby", &key, "gen", "1"])
        .trim()
        .parse()
        .expect("a generation");
    let generation_text = generation.to_string();
    let incarnation_text = incarnation.to_string();
    redis.cli(&[
        "hset",
        &key,
        "node",
        node,
        "inc",
        &incarnation_text,
        "gen",
        &generation_text,
    ]);
    Fence::new(incarnation, generation)
}

async fn a_node_restarted_under_its_name_is_a_new_incarnation(redis: Redis) {
    let first = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    start(&first, "s").await;
    let location = b.cluster().locate("s").await.unwrap();
    // The same name again, as a restarted container: the first's holdings are anyone's at once.
    let second = redis.node("a", options()).await;
    assert_ne!(
        second.cluster().lease().incarnation(),
        first.cluster().lease().incarnation()
    );
    let taken = take_over(&b, "s", &location).await;
    assert!(matches!(taken, TakeOver::Taken(_)), "{taken:?}");
    // The first learns at its next renewal that it is no longer the node of that name: its
    // lease lapses, and it comes back as an incarnation of its own.
    let lease = first.cluster().lease().clone();
    let before = lease.incarnation();
    eventually("the first incarnation learns it lapsed", || {
        let lease = lease.clone();
        async move { lease.incarnation() != before }
    })
    .await;
}
on_both!(a_node_restarted_under_its_name_is_a_new_incarnation);

async fn a_node_back_from_a_lapse_reclaims_what_nobody_took(redis: Redis) {
    let a = redis.node("a", options()).await;
    let fence = start(&a, "s").await;
    let lease = a.cluster().lease().clone();
    // Its membership lapses behind its back (as when it was paused past its lease).
    redis.cli(&["hdel", "t:{m}:members", "a"]);
    eventually("the node comes back as a new incarnation", || {
        let lease = lease.clone();
        async move { lease.incarnation() != fence.incarnation && lease.is_valid() }
    })
    .await;
    let reclaimed = a
        .cluster()
        .reclaim("s", fence)
        .await
        .unwrap()
        .expect("claimed");
    assert_eq!(reclaimed.generation, fence.generation);
    assert_eq!(reclaimed.incarnation, lease.incarnation());
    a.event_store()
        .write("s", Some(reclaimed), &[Write::Open { stream: 1 }])
        .await
        .unwrap();
}
on_both!(a_node_back_from_a_lapse_reclaims_what_nobody_took);

/// After Redis lost its data, every node registers anew; nobody takes a session over until a
/// lease has passed, so that every live node had one to renew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_lost_its_data_nobody_takes_over_for_a_lease() {
    let mut redis = Redis::single();
    let a = redis.node("a", options()).await;
    let b = redis.node("b", options()).await;
    redis.server().restart().expect("redis-server restarts");
    let (la, lb) = (a.cluster().lease().clone(), b.cluster().lease().clone());
    let (ia, ib) = (la.incarnation(), lb.incarnation());
    eventually("both nodes registered anew", || {
        let (la, lb) = (la.clone(), lb.clone());
        async move { la.incarnation() != ia && lb.incarnation() != ib && la.is_valid() }
    })
    .await;
    let location = Location::Held(Holder::new("ghost", Fence::new(3, 0)));
    redis.cli(&["hset", "t:{s}", "node", "ghost", "inc", "3", "gen", "0"]);
    // The seams' connection comes back after its first command fails.
    let cluster = b.cluster();
    eventually("the command connection is back", || {
        let cluster = cluster.clone();
        async move { cluster.locate("s").await.is_ok() }
    })
    .await;
    let first = b.cluster().take_over("s", &location).await.unwrap();
    assert!(
        matches!(first, TakeOver::Wait(d) if d <= LEASE),
        "{first:?}"
    );
    let taken = take_over(&b, "s", &location).await;
    assert!(
        matches!(taken, TakeOver::Taken(f) if f.generation == 1),
        "{taken:?}"
    );
}
