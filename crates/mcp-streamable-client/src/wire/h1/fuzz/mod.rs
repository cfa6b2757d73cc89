//! The differential fuzzers of the HTTP/1.1 decoders, fed in arbitrary reads: response heads
//! against `httparse` on the whole input and the framing rules of RFC 9112 as `reference.rs`
//! reads them, and chunked bodies against `reference.rs`'s reading of section 7.1.
//!
//! Unit tests, so that the decoders stay private to the crate. `cargo test` runs a short round;
//! `cargo xtask fuzz` a long one (`MCP_FUZZ_CASES`, `MCP_FUZZ_SECONDS`), in an optimised build
//! that keeps overflow checks.

mod inputs;
mod reference;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use proptest::prop_assert_eq;
use proptest::sample::Index;
use proptest::strategy::Strategy;
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use super::decode::{Decoder, Framing, Step};
use super::head;
use reference::{Body, Chunked};

/// Runs `property` on values of `strategy`: `MCP_FUZZ_CASES` cases, or rounds of cases for
/// `MCP_FUZZ_SECONDS` seconds, else a round short enough for every `cargo test`. A failure
/// panics with the smallest input proptest shrank it to.
fn fuzz<S>(name: &str, strategy: S, property: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: Debug,
{
    let number = |var: &str| std::env::var(var).ok().and_then(|v| v.parse::<u32>().ok());
    let until = number("MCP_FUZZ_SECONDS").map(|s| Instant::now() + Duration::from_secs(s.into()));
    let cases = match until {
        Some(_) => 5_000,
        None => number("MCP_FUZZ_CASES").unwrap_or(2_000),
    };
    let started = Instant::now();
    let mut rounds = 0;
    loop {
        let config = Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        };
        if let Err(failure) = TestRunner::new(config).run(&strategy, &property) {
            panic!("{name}: {failure}");
        }
        rounds += 1;
        if until.is_none_or(|until| Instant::now() >= until) {
            break;
        }
    }
    let ran = u64::from(cases) * rounds;
    eprintln!("fuzz {name}: {ran} cases in {:.1?}", started.elapsed());
}

/// What a head reads as, on either side.
#[derive(Debug, PartialEq, Eq)]
enum Read {
    Head {
        status: u16,
        http10: bool,
        /// Each field name's values, in order.
        fields: BTreeMap<String, Vec<Vec<u8>>>,
        body: Body,
        keep_alive: bool,
        /// Bytes of the input the heads took, interim ones included.
        used: usize,
    },
    Incomplete,
    Invalid,
}

/// [`head::parse`] fed `pieces`, one read after the other.
fn parse_in_pieces(pieces: &[&[u8]]) -> Read {
    let (mut buf, mut fed) = (BytesMut::new(), 0);
    for piece in pieces {
        buf.extend_from_slice(piece);
        fed += piece.len();
        let head = match head::parse(&mut buf) {
            Ok(Some(head)) => head,
            Ok(None) => continue,
            Err(_) => return Read::Invalid,
        };
        let mut fields = BTreeMap::<String, Vec<Vec<u8>>>::new();
        for (name, value) in &head.parts.headers {
            let values = fields.entry(name.as_str().to_owned()).or_default();
            values.push(value.as_bytes().to_vec());
        }
        let body = match head.framing {
            Framing::Length(n) => Body::Length(n),
            Framing::Chunked => Body::Chunked,
            Framing::Close => Body::Close,
        };
        return Read::Head {
            status: head.parts.status.as_u16(),
            http10: head.parts.version == http::Version::HTTP_10,
            fields,
            body,
            keep_alive: head.keep_alive,
            used: fed - buf.len(),
        };
    }
    Read::Incomplete
}

/// The whole input read by `httparse`, interim heads skipped, the framing by `reference`.
fn parse_reference(input: &[u8]) -> Read {
    let mut at = 0;
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 100];
        let mut response = httparse::Response::new(&mut headers);
        let len = match response.parse(&input[at..]) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => return Read::Incomplete,
            Err(_) => return Read::Invalid,
        };
        let status = response.code.unwrap_or_default();
        match status {
            101 | 0..=99 => return Read::Invalid,
            100..=199 => {
                at += len;
                continue;
            }
            _ => {}
        }
        let list: Vec<(String, Vec<u8>)> = response
            .headers
            .iter()
            .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
            .collect();
        let http10 = response.version == Some(0);
        let Some((body, keep_alive)) = reference::framing(http10, status, &list) else {
            return Read::Invalid;
        };
        let mut fields = BTreeMap::<String, Vec<Vec<u8>>>::new();
        for (name, value) in list {
            fields.entry(name).or_default().push(value);
        }
        return Read::Head {
            status,
            http10,
            fields,
            body,
            keep_alive,
            used: at + len,
        };
    }
}

/// A [`Decoder`] of chunks fed `pieces`, one read after the other.
fn decode_in_pieces(pieces: &[&[u8]]) -> Chunked {
    let mut decoder = Decoder::new(Framing::Chunked);
    let (mut buf, mut fed, mut data) = (BytesMut::new(), 0, Vec::new());
    for piece in pieces {
        buf.extend_from_slice(piece);
        fed += piece.len();
        loop {
            match decoder.decode(&mut buf) {
                Ok(Step::Data(bytes)) => data.extend_from_slice(&bytes),
                Ok(Step::More) => break,
                Ok(Step::End) => {
                    let used = fed - buf.len();
                    return Chunked::Body { data, used };
                }
                Err(_) => return Chunked::Invalid,
            }
        }
    }
    Chunked::Incomplete
}

fn check_head((input, cuts): (Vec<u8>, Vec<Index>)) -> Result<(), TestCaseError> {
    let expected = parse_reference(&input);
    prop_assert_eq!(parse_in_pieces(&inputs::pieces(&input, &cuts)), expected);
    Ok(())
}

fn check_chunked((input, cuts): (Vec<u8>, Vec<Index>)) -> Result<(), TestCaseError> {
    let expected = reference::chunked(&input);
    prop_assert_eq!(decode_in_pieces(&inputs::pieces(&input, &cuts)), expected);
    Ok(())
}

#[test]
fn fuzz_heads_read_in_any_pieces_as_httparse_and_rfc_9112_read_them() {
    fuzz("h1 heads", (inputs::response(), inputs::cuts()), check_head);
}

#[test]
fn fuzz_chunked_bodies_read_in_any_pieces_as_rfc_9112_reads_them() {
    fuzz(
        "h1 chunked",
        (inputs::chunked_body(), inputs::cuts()),
        check_chunked,
    );
}
