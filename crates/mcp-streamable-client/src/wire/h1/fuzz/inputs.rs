//! What the differential tests feed the decoders: response heads and chunked bodies that are
//! nearly right, built from pieces that are right, nearly right and wrong, so that most cases
//! go deep before they go wrong.

use proptest::prelude::*;
use proptest::sample::{Index, select};

/// Picks one of `pieces`.
fn one(pieces: &[&'static [u8]]) -> impl Strategy<Value = &'static [u8]> + use<> {
    select(pieces.to_vec())
}

/// A line end: mostly CRLF, sometimes what a careless server writes.
fn end() -> impl Strategy<Value = &'static [u8]> {
    prop_oneof![8 => Just(&b"\r\n"[..]), 1 => one(&[b"\n", b"\r", b"", b"\r\r\n"])]
}

/// Bytes of data: a small alphabet with the framing's own bytes in it.
fn data(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(select(b"ab0\r\n;\x00\xff".to_vec()), 0..max)
}

/// Concatenates `parts`.
fn join(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// How a chunk's size is written for `len` bytes of data.
fn size(len: usize) -> impl Strategy<Value = Vec<u8>> {
    let exact = prop_oneof![
        Just(format!("{len:x}")),
        Just(format!("{len:X}")),
        Just(format!("000{len:x}")),
        Just(format!("{:x}", len + 1)),
        Just(format!("{:x}", len.saturating_sub(1))),
    ];
    let wrong = one(&[
        b"",
        b"g",
        b" 5",
        b"-1",
        b"+1",
        b"0x5",
        b"ffffffffffffffffff",
        b"10000000000000000",
        b"ffffffffffffffff",
    ]);
    prop_oneof![
        6 => exact.prop_map(String::into_bytes),
        1 => wrong.prop_map(<[u8]>::to_vec),
    ]
}

/// What may follow a size on its line: extensions right and wrong, white space.
fn extensions() -> impl Strategy<Value = Vec<u8>> {
    let piece = one(&[
        b";a",
        b";a=b",
        b" ; a = b",
        b";a=\"q \\\" x\"",
        b";a=\"\"",
        b"\t",
        b" ",
        b";a=\"open",
        b";",
        b";=b",
        b";a=",
        b";a b",
        b";a\x00",
        b";a\nb",
        b";a\rb",
        b";\xff",
        b";a=\"\x7f\"",
        b";a=\"\\\x01\"",
    ]);
    prop_oneof![
        3 => Just(Vec::new()),
        2 => prop::collection::vec(piece, 1..3).prop_map(|p| p.concat()),
    ]
}

/// One chunk: size line, data, and what should be its CRLF.
fn chunk() -> impl Strategy<Value = Vec<u8>> {
    data(12).prop_flat_map(|data| {
        let after = prop_oneof![8 => Just(&b"\r\n"[..]), 1 => one(&[b"\n", b"", b"X", b"\r"])];
        (size(data.len()), extensions(), end(), Just(data), after)
            .prop_map(|(size, ext, end, data, after)| join(&[&size, &ext, end, &data, after]))
    })
}

/// A trailer line, right or wrong, with its end.
fn trailer() -> impl Strategy<Value = Vec<u8>> {
    let line = one(&[
        b"x-t: 1",
        b"x-t:",
        b"x-t: \xff",
        b"X-T:\t1 \t",
        b"bad line",
        b": v",
        b"x t: 1",
        b"x-t: a\nb",
        b"x-t: \x00",
        b"x-t: a\rb",
    ]);
    (line, end()).prop_map(|(line, end)| join(&[line, end]))
}

/// A chunked body, nearly right, and what comes after it on the connection.
pub(super) fn chunked_body() -> impl Strategy<Value = Vec<u8>> {
    let last = (one(&[b"0", b"000", b"00", b"0 "]), extensions(), end());
    (
        prop::collection::vec(chunk(), 0..4),
        last,
        prop::collection::vec(trailer(), 0..3),
        end(),
        one(&[b"", b"HTTP/1.1 200 OK\r\n", b"0\r\n"]),
    )
        .prop_map(
            |(chunks, (zero, ext, zero_end), trailers, last_end, next)| {
                let mut body = chunks.concat();
                body.extend(join(&[zero, &ext, zero_end]));
                body.extend(trailers.concat());
                body.extend(join(&[last_end, next]));
                body
            },
        )
}

/// A header field line, with its end: mostly those that frame the body.
fn field() -> impl Strategy<Value = Vec<u8>> {
    let framing = one(&[
        b"Content-Length",
        b"content-length",
        b"Transfer-Encoding",
        b"Connection",
    ]);
    let other = one(&[
        b"Mcp-Session-Id",
        b"MCP-PROTOCOL-VERSION",
        b"X-Accel-Buffering",
        b"x-a",
        b"Content-Type",
        b"Bad Name",
        b"",
        b"x\x7f",
        b"x-\xff",
    ]);
    let name = prop_oneof![2 => framing, 1 => other];
    let value = one(&[
        b"0",
        b"7",
        b"007",
        b"7, 7",
        b"7,8",
        b"7,",
        b"-1",
        b"",
        b"99999999999999999999",
        b"chunked",
        b"gzip, chunked",
        b"chunked, gzip",
        b"chunked,",
        b", chunked",
        b"CHUNKED",
        b"identity",
        b",",
        b"close",
        b"keep-alive, Close",
        b"x\x80y",
        b"a\x00b",
        b"\t v \t",
        b"a\x7fb",
    ]);
    let separator = one(&[b": ", b":", b" : ", b":\t"]);
    (name, separator, value, end()).prop_map(|(n, s, v, e)| join(&[n, s, v, e]))
}

/// A response head: status line, fields, the empty line.
fn head() -> impl Strategy<Value = Vec<u8>> {
    let version = prop_oneof![6 => Just(&b"HTTP/1.1"[..]), 2 => Just(&b"HTTP/1.0"[..]), 1 => one(&[b"HTTP/2", b"http/1.1", b"HTTP/1.2", b"HTTP/1.1 "])];
    let code = prop_oneof![
        6 => one(&[b"200", b"202", b"204", b"304", b"404"]),
        2 => one(&[b"100", b"103", b"101", b"199"]),
        1 => one(&[b"099", b"600", b"999", b"20", b"2000", b"abc"]),
    ];
    let reason = one(&[b" OK", b" ", b"", b" Accepted", b" ok\x01", b" \xe9t\xe9"]);
    (
        version,
        code,
        reason,
        end(),
        prop::collection::vec(field(), 0..6),
        end(),
    )
        .prop_map(|(v, c, r, e, fields, last)| join(&[v, b" ", c, r, e, &fields.concat(), last]))
}

/// Heads as a server writes them: at times an interim one first, then bytes of the body.
pub(super) fn response() -> impl Strategy<Value = Vec<u8>> {
    let interim =
        prop_oneof![3 => Just(Vec::new()), 1 => Just(b"HTTP/1.1 100 Continue\r\n\r\n".to_vec())];
    (interim, head(), data(8)).prop_map(|(interim, head, body)| join(&[&interim, &head, &body]))
}

/// Where to cut an input into the reads that bring it.
pub(super) fn cuts() -> impl Strategy<Value = Vec<Index>> {
    prop::collection::vec(any::<Index>(), 0..8)
}

/// `input` cut at the places `cuts` pick: the reads that bring it, in order.
pub(super) fn pieces<'a>(input: &'a [u8], cuts: &[Index]) -> Vec<&'a [u8]> {
    let mut at: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
    at.extend([0, input.len()]);
    at.sort_unstable();
    at.windows(2).map(|w| &input[w[0]..w[1]]).collect()
}
