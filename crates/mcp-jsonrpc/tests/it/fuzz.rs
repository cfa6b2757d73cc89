//! The differential fuzzer: `parse` against the reference reading of the RFCs (`reference.rs`)
//! on bodies that are nearly messages, then on those bodies with a few bytes changed. Both must
//! agree on the messages, or on the error code and the batch element at fault.
//!
//! `cargo test` runs a short round; `cargo xtask fuzz` a long one (`MCP_FUZZ_CASES`,
//! `MCP_FUZZ_SECONDS`), in an optimised build that keeps overflow checks.

use std::{fmt::Debug, time::Duration, time::Instant};

use mcp_jsonrpc::parse;
use proptest::{
    prelude::*,
    sample::Index,
    test_runner::{Config, TestCaseError, TestRunner},
};

use crate::reference;

/// Cases per target in a plain `cargo test`: a second or two on a slow machine.
const DEFAULT_CASES: u32 = 1_000;

/// How long a run is: a count of cases, or a time to keep going for.
enum Budget {
    Cases(u32),
    Seconds(Duration),
}

impl Budget {
    fn from_env() -> Budget {
        let number = |name| {
            std::env::var(name).ok().map(|value: String| {
                value
                    .parse::<u32>()
                    .unwrap_or_else(|_| panic!("{name}={value:?} is not a count"))
            })
        };
        match (number("MCP_FUZZ_SECONDS"), number("MCP_FUZZ_CASES")) {
            (Some(seconds), _) => Budget::Seconds(Duration::from_secs(seconds.into())),
            (None, cases) => Budget::Cases(cases.unwrap_or(DEFAULT_CASES)),
        }
    }
}

/// Runs `test` on values of `strategy` for the budget the environment asks for; a failure
/// panics with the smallest input proptest could shrink it to.
fn run<S: Strategy>(name: &str, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: Debug,
{
    let budget = Budget::from_env();
    let started = Instant::now();
    let mut ran = 0_u64;
    loop {
        let cases = match budget {
            Budget::Cases(cases) => cases,
            Budget::Seconds(_) => 5_000,
        };
        // A fresh seed each round; the failing input is printed, so nothing is persisted.
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        if let Err(error) = TestRunner::new(config).run(&strategy, &test) {
            panic!("{name}: {error}");
        }
        ran += u64::from(cases);
        match budget {
            Budget::Seconds(limit) if started.elapsed() < limit => {}
            _ => break,
        }
    }
    eprintln!("fuzz {name}: {ran} cases in {:.1?}", started.elapsed());
}

/// JSON text for a member's value: right for some members, wrong for others, with the
/// awkward corners of strings and numbers.
fn value() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(vec![
        "null",
        "true",
        "false",
        "0",
        "-0",
        "1",
        "-7",
        "1.0",
        "1e0",
        "0.5",
        "-0.0",
        "1e400",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "\"\"",
        "\"2.0\"",
        "\"2\\u002e0\"",
        "\"m\"",
        "\"ping\"",
        "\"\\ud800\"",
        "\"\\udc00x\"",
        "\"\\ud83d\\ude00\"",
        "\"\\u0000\"",
        "\"é€\"",
        "\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\"",
        "[]",
        "{}",
        "[1]",
        "{\"a\":1}",
        "{\"code\":-32000,\"message\":\"m\"}",
        "{\"code\":1,\"message\":\"m\",\"data\":null}",
        "{\"message\":\"m\",\"code\":7,\"x\":[]}",
        "{\"code\":1,\"code\":2,\"message\":\"m\"}",
        "{\"code\":1.5,\"message\":\"m\"}",
        "{\"code\":1}",
        "[-32000,\"m\"]",
        "[-32000,\"m\",null]",
    ])
    .prop_map(str::to_owned);
    leaf.prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec((name(), inner), 0..3).prop_map(|members| {
                let members: Vec<String> =
                    members.iter().map(|(n, v)| format!("{n}:{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

/// A member name, quoted: the six that make a message, spelled plainly or escaped, and others.
fn name() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "jsonrpc",
        "id",
        "method",
        "params",
        "result",
        "error",
        "code",
        "message",
        "data",
        "m\\u0065thod",
        "\\u0069d",
        "x",
        "",
        "\\ud800",
        "Method",
    ])
    .prop_map(|name| format!("\"{name}\""))
}

/// The value a member of a message usually has, so that most objects are nearly messages.
fn fitting(name: &str) -> BoxedStrategy<String> {
    let pick = |values: &[&'static str]| {
        prop::sample::select(values.to_vec())
            .prop_map(str::to_owned)
            .boxed()
    };
    match name {
        "\"jsonrpc\"" => pick(&["\"2.0\""]),
        "\"id\"" => pick(&["1", "\"a\"", "null", "-3"]),
        "\"method\"" | "\"m\\u0065thod\"" => pick(&["\"ping\"", "\"tools/call\""]),
        "\"params\"" => pick(&["{}", "[1,{\"a\":null}]", "null", "{\"_meta\":{}}"]),
        "\"error\"" => pick(&["{\"code\":-32601,\"message\":\"no\"}"]),
        _ => value().boxed(),
    }
}

fn member() -> impl Strategy<Value = String> {
    (name(), any::<bool>()).prop_flat_map(|(name, fits)| {
        let value = if fits {
            fitting(&name)
        } else {
            value().boxed()
        };
        value.prop_map(move |value| format!("{name}:{value}"))
    })
}

/// Whitespace RFC 8259 allows between tokens, mostly none.
fn ws() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["", "", "", " ", "\n", "\t", "\r\n "])
}

/// An object that is nearly a message: `"jsonrpc":"2.0"` most of the time, then members.
fn object() -> impl Strategy<Value = String> {
    (
        any::<bool>(),
        prop::collection::vec((member(), ws()), 0..5),
        ws(),
    )
        .prop_map(|(versioned, members, end)| {
            let mut parts: Vec<String> = members.iter().map(|(m, w)| format!("{w}{m}")).collect();
            if versioned {
                parts.insert(0, "\"jsonrpc\":\"2.0\"".to_owned());
            }
            format!("{{{}{end}}}", parts.join(","))
        })
}

/// A body: one object, a batch of them, or now and then a value that is not an object.
fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => object(),
        2 => prop::collection::vec(object(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
        1 => value(),
    ]
    .prop_map(String::into_bytes)
}

/// A change of a byte or a few: the bytes that matter to JSON and to UTF-8, and a BOM.
#[derive(Debug, Clone)]
enum Mutation {
    Insert(Index, u8),
    Replace(Index, u8),
    Delete(Index),
    /// Repeats the bytes between two positions right after them.
    Repeat(Index, Index),
    Bom,
}

const BYTES: &[u8] = b"\"\\{}[],: \t\n0-.eEu\xff\xc3\xed\xa0\x80\x00\x1f\x7f";

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop::sample::select(BYTES);
    prop_oneof![
        (any::<Index>(), byte.clone()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<Index>(), byte).prop_map(|(at, b)| Mutation::Replace(at, b)),
        any::<Index>().prop_map(Mutation::Delete),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::Repeat(a, b)),
        Just(Mutation::Bom),
    ]
}

fn mutate(mut bytes: Vec<u8>, mutations: &[Mutation]) -> Vec<u8> {
    for mutation in mutations {
        let len = bytes.len();
        match *mutation {
            Mutation::Insert(at, byte) => bytes.insert(at.index(len + 1), byte),
            Mutation::Replace(at, byte) if len > 0 => bytes[at.index(len)] = byte,
            Mutation::Delete(at) if len > 0 => {
                bytes.remove(at.index(len));
            }
            Mutation::Repeat(a, b) => {
                let (a, b) = (a.index(len + 1), b.index(len + 1));
                let range = a.min(b)..a.max(b);
                let copy = bytes[range.clone()].to_vec();
                bytes.splice(range.end..range.end, copy);
            }
            Mutation::Bom => bytes.splice(0..0, *b"\xef\xbb\xbf").for_each(drop),
            Mutation::Replace(..) | Mutation::Delete(_) => {}
        }
    }
    bytes
}

/// Ours and the reference's reading of `bytes`, which must be the same.
fn agree(bytes: &[u8]) -> Result<(), TestCaseError> {
    let ours = parse(bytes).map_err(|error| (error.code(), error.batch_index()));
    let theirs = reference::parse(bytes);
    prop_assert_eq!(&ours, &theirs, "on {:?}", String::from_utf8_lossy(bytes));
    Ok(())
}

#[test]
fn fuzz_nearly_messages_read_as_the_rfcs_say() {
    run("nearly_messages", body(), |bytes| agree(&bytes));
}

#[test]
fn fuzz_mutated_messages_read_as_the_rfcs_say() {
    let mutated = (body(), prop::collection::vec(mutation(), 1..4))
        .prop_map(|(bytes, mutations)| mutate(bytes, &mutations));
    run("mutated_messages", mutated, |bytes| agree(&bytes));
}
