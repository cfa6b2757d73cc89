//! The body of an HTTP/1.1 response, taken out of the bytes read: a length, chunks, or the
//! rest of the connection (RFC 9112, sections 6.3 and 7.1).

use bytes::{Buf, Bytes, BytesMut};

use super::error::H1Error;

/// The longest chunk size line accepted, extensions included: a size is at most 16 hex digits,
/// and no server the client talks to needs long extensions.
const MAX_CHUNK_LINE: usize = 4 * 1024;

/// The most trailer field bytes read (and dropped) after the last chunk.
const MAX_TRAILERS: usize = 16 * 1024;

/// How the end of a body is found, from its response's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Length`, or none at all (0).
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// Neither: the body ends with the connection.
    Close,
}

/// Takes a body's data out of its connection's read buffer.
#[derive(Debug)]
pub(crate) struct Decoder {
    state: State,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Bytes left of a body of known length.
    Length(u64),
    /// The next chunk size line.
    Size,
    /// Bytes left of a chunk's data.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// The trailer section after the last chunk, and how much of it was read.
    Trailers(usize),
    /// Up to the connection's end.
    Close,
    /// The body is complete.
    Done,
}

/// One step of [decoding](Decoder::decode).
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Data of the body.
    Data(Bytes),
    /// The buffer holds no more of the body: read more.
    More,
    /// The body is complete.
    End,
}

impl Decoder {
    pub(crate) fn new(framing: Framing) -> Decoder {
        let state = match framing {
            Framing::Length(0) => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Size,
            Framing::Close => State::Close,
        };
        Decoder { state }
    }

    /// Whether the body is complete.
    pub(crate) fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// The bytes of the body still to come, when known.
    pub(crate) fn remaining(&self) -> Option<u64> {
        match self.state {
            State::Length(n) => Some(n),
            State::Done => Some(0),
            _ => None,
        }
    }

    /// Takes the next data of the body out of `buf`. The framing that follows the data (the
    /// CRLF after a chunk, the next size line, the trailers) is taken as far as `buf` holds it,
    /// so that a body whose end has been read is [done](Decoder::is_done) with its last data.
    pub(crate) fn decode(&mut self, buf: &mut BytesMut) -> Result<Step, H1Error> {
        self.settle(buf)?;
        let data = match &mut self.state {
            State::Done => return Ok(Step::End),
            _ if buf.is_empty() => return Ok(Step::More),
            State::Length(left) | State::Data(left) => {
                let n = usize::try_from(*left).map_or(buf.len(), |left| left.min(buf.len()));
                *left -= n as u64;
                buf.split_to(n).freeze()
            }
            State::Close => buf.split().freeze(),
            // `settle` leaves these only when `buf` holds no more of them.
            State::Size | State::DataEnd | State::Trailers(_) => return Ok(Step::More),
        };
        match self.state {
            State::Length(0) => self.state = State::Done,
            State::Data(0) => self.state = State::DataEnd,
            _ => {}
        }
        self.settle(buf)?;
        Ok(Step::Data(data))
    }

    /// The connection ended: the end of a body that runs to it, else an incomplete body.
    pub(crate) fn end_of_connection(&mut self) -> Result<(), H1Error> {
        match self.state {
            State::Close | State::Done => {
                self.state = State::Done;
                Ok(())
            }
            _ => Err(H1Error::Closed),
        }
    }

    /// Takes the framing bytes at the front of `buf` that carry no data.
    fn settle(&mut self, buf: &mut BytesMut) -> Result<(), H1Error> {
        loop {
            match self.state {
                State::Size => match httparse::parse_chunk_size(buf) {
                    Ok(httparse::Status::Complete((used, size))) => {
                        buf.advance(used);
                        self.state = match size {
                            0 => State::Trailers(0),
                            n => State::Data(n),
                        };
                    }
                    Ok(httparse::Status::Partial) if buf.len() <= MAX_CHUNK_LINE => return Ok(()),
                    _ => return Err(H1Error::ChunkSize),
                },
                State::DataEnd => match buf.get(..2) {
                    None if buf.first().is_none_or(|b| *b == b'\r') => return Ok(()),
                    Some(b"\r\n") => {
                        buf.advance(2);
                        self.state = State::Size;
                    }
                    _ => return Err(H1Error::ChunkEnd),
                },
                State::Trailers(read) => match memchr::memmem::find(buf, b"\r\n") {
                    Some(0) => {
                        buf.advance(2);
                        self.state = State::Done;
                    }
                    Some(line) if read + line + 2 <= MAX_TRAILERS => {
                        buf.advance(line + 2);
                        self.state = State::Trailers(read + line + 2);
                    }
                    None if read + buf.len() <= MAX_TRAILERS => return Ok(()),
                    _ => return Err(H1Error::TrailersTooLarge),
                },
                State::Length(_) | State::Data(_) | State::Close | State::Done => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes `wire` fed `step` bytes at a time: the body's bytes, and whether it ended.
    fn feed(framing: Framing, wire: &[u8], step: usize) -> Result<(Vec<u8>, bool), H1Error> {
        let mut decoder = Decoder::new(framing);
        let mut buf = BytesMut::new();
        let mut body = Vec::new();
        for piece in wire.chunks(step) {
            buf.extend_from_slice(piece);
            loop {
                match decoder.decode(&mut buf)? {
                    Step::Data(data) => body.extend_from_slice(&data),
                    Step::More => break,
                    Step::End => return Ok((body, true)),
                }
            }
        }
        Ok((body, decoder.is_done()))
    }

    const CHUNKED: &[u8] =
        b"5\r\nhello\r\n1;ext=\"a b\"\r\n,\r\nA\r\n world, hi\r\n0\r\nx-t: 1\r\n\r\n";

    #[test]
    fn chunks_decode_whatever_the_reads_split() {
        for step in 1..=CHUNKED.len() {
            let (body, ended) = feed(Framing::Chunked, CHUNKED, step).unwrap();
            assert_eq!(body, b"hello, world, hi", "step {step}");
            assert!(ended, "step {step}");
        }
    }

    #[test]
    fn a_length_ends_the_body_and_leaves_what_follows() {
        let mut decoder = Decoder::new(Framing::Length(5));
        let mut buf = BytesMut::from(&b"hellorest"[..]);
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Step::Data(Bytes::from_static(b"hello"))
        );
        assert!(decoder.is_done());
        assert_eq!(decoder.decode(&mut buf).unwrap(), Step::End);
        assert_eq!(&buf[..], b"rest");
        for step in 1..=5 {
            assert_eq!(
                feed(Framing::Length(5), b"hello", step).unwrap(),
                (b"hello".to_vec(), true)
            );
        }
    }

    #[test]
    fn the_last_chunk_read_with_the_data_ends_the_body_with_it() {
        let mut decoder = Decoder::new(Framing::Chunked);
        let mut buf = BytesMut::from(&b"2\r\nok\r\n0\r\n\r\n"[..]);
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Step::Data(Bytes::from_static(b"ok"))
        );
        assert!(decoder.is_done());
        assert!(buf.is_empty());
    }

    #[test]
    fn a_body_up_to_the_close_ends_with_the_connection() {
        let mut decoder = Decoder::new(Framing::Close);
        let mut buf = BytesMut::from(&b"all"[..]);
        assert_eq!(
            decoder.decode(&mut buf).unwrap(),
            Step::Data(Bytes::from_static(b"all"))
        );
        assert_eq!(decoder.decode(&mut buf).unwrap(), Step::More);
        decoder.end_of_connection().unwrap();
        assert_eq!(decoder.decode(&mut buf).unwrap(), Step::End);
    }

    #[test]
    fn a_body_cut_short_by_the_close_is_an_error() {
        let mut decoder = Decoder::new(Framing::Length(10));
        let mut buf = BytesMut::from(&b"short"[..]);
        decoder.decode(&mut buf).unwrap();
        assert!(matches!(decoder.end_of_connection(), Err(H1Error::Closed)));
        let mut chunked = Decoder::new(Framing::Chunked);
        assert!(matches!(chunked.end_of_connection(), Err(H1Error::Closed)));
        assert!(Decoder::new(Framing::Length(0)).end_of_connection().is_ok());
    }

    #[test]
    fn bad_framing_is_an_error() {
        for wire in [
            &b"zz\r\n"[..],
            b"5\r\nhelloXY",
            b"ffffffffffffffffff\r\n",
            b"2\r\nok\r\r",
        ] {
            assert!(
                feed(Framing::Chunked, wire, wire.len()).is_err(),
                "{wire:?}"
            );
        }
        let long_line = [b"1;".as_slice(), &[b'a'; MAX_CHUNK_LINE]].concat();
        assert!(matches!(
            feed(Framing::Chunked, &long_line, 512),
            Err(H1Error::ChunkSize)
        ));
        let trailers = [
            b"0\r\n".as_slice(),
            &b"x: y\r\n".repeat(MAX_TRAILERS / 6 + 1),
        ]
        .concat();
        assert!(matches!(
            feed(Framing::Chunked, &trailers, 100),
            Err(H1Error::TrailersTooLarge)
        ));
    }
}
