//! Property tests: what is encoded parses back to the same message.

use mcp_jsonrpc::{Body, ErrorObject, Id, Message, Notification, Request, Response, parse};
use proptest::prelude::*;
use serde_json::value::{RawValue, to_raw_value};

fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        any::<i64>().prop_map(Id::from),
        ".{0,12}".prop_map(Id::from)
    ]
}

/// JSON values of modest size and depth, with awkward strings.
fn json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,8}|[\"\\\\\n\r\t\u{0}]{0,4}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn structured() -> impl Strategy<Value = Option<Box<RawValue>>> {
    prop::option::of(prop_oneof![
        prop::collection::vec(json(), 0..3).prop_map(serde_json::Value::from),
        prop::collection::btree_map("\\PC{0,6}", json(), 0..3)
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
    ])
    .prop_map(|v| v.map(|v| to_raw_value(&v).unwrap()))
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        (id(), "\\PC{0,16}", structured()).prop_map(|(i, m, p)| Request::new(i, m, p).into()),
        ("\\PC{0,16}", structured()).prop_map(|(m, p)| Notification::new(m, p).into()),
        (id(), json()).prop_map(|(i, v)| Response::success(i, to_raw_value(&v).unwrap()).into()),
        (
            prop::option::of(id()),
            any::<i64>(),
            "\\PC{0,16}",
            prop::option::of(json())
        )
            .prop_map(|(i, code, msg, data)| {
                let mut err = ErrorObject::new(code, msg);
                err.data = data.map(|d| to_raw_value(&d).unwrap());
                Response::error(i, err).into()
            }),
    ]
}

proptest! {
    #[test]
    fn a_message_round_trips(msg in message()) {
        let bytes = msg.to_vec();
        prop_assert_eq!(parse(&bytes).unwrap(), Body::Single(msg));
    }

    #[test]
    fn a_batch_round_trips(msgs in prop::collection::vec(message(), 1..6)) {
        let body = Body::Batch(msgs);
        prop_assert_eq!(parse(&body.to_vec()).unwrap(), body);
    }

    #[test]
    fn parsing_never_panics_and_maps_to_a_standard_code(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        if let Err(err) = parse(&bytes) {
            prop_assert!(err.code() == -32700 || err.code() == -32600);
        }
    }

    #[test]
    fn encoding_is_json_with_the_expected_members(msg in message()) {
        let ours: serde_json::Value = serde_json::from_slice(&msg.to_vec()).unwrap();
        prop_assert_eq!(&ours["jsonrpc"], "2.0");
        let keys: Vec<&str> = ours.as_object().unwrap().keys().map(String::as_str).collect();
        let allowed: &[&str] = match &msg {
            Message::Request(_) => &["jsonrpc", "id", "method", "params"],
            Message::Notification(_) => &["jsonrpc", "method", "params"],
            Message::Response(r) if r.is_error() => &["jsonrpc", "id", "error"],
            Message::Response(_) => &["jsonrpc", "id", "result"],
        };
        prop_assert!(keys.iter().all(|k| allowed.contains(k)), "{keys:?}");
        prop_assert_eq!(ours, serde_json::to_value(&msg).unwrap());
    }
}
