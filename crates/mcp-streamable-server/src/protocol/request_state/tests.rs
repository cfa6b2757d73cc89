use super::*;

const CONTEXT: &str = "tools/call book";

fn sealer() -> StateSealer {
    StateSealer::new("k1", &[1; 32]).unwrap()
}

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

#[test]
fn m9_a_sealed_state_opens_on_any_sealer_with_the_key() {
    let state = sealer().seal_at(CONTEXT, b"step 2", at(1_000));
    // Another node: a sealer built from the same key.
    let other = StateSealer::new("k1", &[1; 32]).unwrap();
    assert_eq!(
        other.open_at(CONTEXT, &state, at(1_001)).unwrap(),
        b"step 2"
    );
    // Empty and binary payloads too.
    for payload in [&b""[..], &[0, 255, b'.', 10]] {
        let state = sealer().seal_at(CONTEXT, payload, at(1_000));
        assert_eq!(
            sealer().open_at(CONTEXT, &state, at(1_000)).unwrap(),
            payload
        );
    }
}

#[test]
fn m9_forged_truncated_and_foreign_states_are_refused() {
    let state = sealer().seal_at(CONTEXT, b"step 2", at(1_000));
    let open = |s: &str| sealer().open_at(CONTEXT, s, at(1_001));
    // Each byte changed in turn.
    for i in 0..state.len() {
        let mut bytes = state.clone().into_bytes();
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let altered = String::from_utf8(bytes).unwrap();
        assert!(open(&altered).is_err(), "byte {i} changed: {altered}");
    }
    // Cut anywhere.
    for len in 0..state.len() {
        assert!(open(&state[..len]).is_err(), "cut at {len}");
    }
    // Another payload under the old seal.
    let (head, tail) = state.rsplit_once('.').unwrap();
    let (prefix, _payload) = head.rsplit_once('.').unwrap();
    let swapped = format!("{prefix}.{}.{tail}", B64.encode(b"step 9"));
    assert_eq!(open(&swapped), Err(StateError::Forged));
    // A later expiry under the old seal.
    let later = state.replacen(".1600.", ".9999999.", 1);
    assert_ne!(later, state);
    assert_eq!(open(&later), Err(StateError::Forged));
    // Another context.
    assert_eq!(
        sealer().open_at("tools/call cancel", &state, at(1_001)),
        Err(StateError::Forged)
    );
    // Another deployment's key under the same id, and a key this sealer does not have.
    let foreign = StateSealer::new("k1", &[2; 32]).unwrap();
    assert_eq!(
        foreign.open_at(CONTEXT, &state, at(1_001)),
        Err(StateError::Forged)
    );
    let unknown = StateSealer::new("k9", &[1; 32]).unwrap();
    assert_eq!(
        unknown.open_at(CONTEXT, &state, at(1_001)),
        Err(StateError::UnknownKey)
    );
    for junk in [
        "",
        ".",
        "s1",
        "s1.k1.1.x.y.z",
        "s2.k1.1600.AA.AA",
        "not a state",
    ] {
        assert!(open(junk).is_err(), "{junk:?}");
    }
}

#[test]
fn m9_a_state_expires_after_its_lifetime() {
    let sealer = sealer().lifetime(Duration::from_secs(60));
    let state = sealer.seal_at(CONTEXT, b"x", at(1_000));
    assert!(sealer.open_at(CONTEXT, &state, at(1_059)).is_ok());
    assert_eq!(
        sealer.open_at(CONTEXT, &state, at(1_060)),
        Err(StateError::Expired)
    );
    assert_eq!(
        sealer.open_at(CONTEXT, &state, at(5_000)),
        Err(StateError::Expired)
    );
    // The default lifetime.
    let state = self::sealer().seal_at(CONTEXT, b"x", at(0));
    let end = DEFAULT_STATE_LIFETIME.as_secs();
    assert!(self::sealer().open_at(CONTEXT, &state, at(end - 1)).is_ok());
    assert_eq!(
        self::sealer().open_at(CONTEXT, &state, at(end)),
        Err(StateError::Expired)
    );
}

#[test]
fn m9_keys_rotate_one_seals_all_open() {
    let old = StateSealer::new("k1", &[1; 32]).unwrap();
    let sealed_before = old.seal_at(CONTEXT, b"before", at(1_000));
    let rotated = StateSealer::new("k2", &[2; 32])
        .unwrap()
        .also_open("k1", &[1; 32])
        .unwrap();
    assert_eq!(
        rotated.open_at(CONTEXT, &sealed_before, at(1_001)).unwrap(),
        b"before"
    );
    let sealed_after = rotated.seal_at(CONTEXT, b"after", at(1_001));
    assert!(sealed_after.starts_with("s1.k2."), "{sealed_after}");
    // A node not rotated yet cannot open what the new key sealed.
    assert_eq!(
        old.open_at(CONTEXT, &sealed_after, at(1_002)),
        Err(StateError::UnknownKey)
    );
}

#[test]
fn m9_weak_or_ambiguous_keys_are_refused() {
    assert_eq!(
        StateSealer::new("k1", &[1; 31]).unwrap_err(),
        StateKeyError::TooShort(31)
    );
    for id in ["", "k.1", "k 1", "ké"] {
        assert!(
            matches!(StateSealer::new(id, &[1; 32]), Err(StateKeyError::BadId(_))),
            "{id:?}"
        );
    }
    assert_eq!(
        sealer().also_open("k1", &[2; 32]).unwrap_err(),
        StateKeyError::DuplicateId("k1".into())
    );
    // The Debug form names the keys, never their bytes.
    let debug = format!("{:?}", sealer());
    assert!(debug.contains("k1") && !debug.contains("[1,"), "{debug}");
}
