//! Reading a POST's body, never buffering more than the limit (S3).

use bytes::{Buf, Bytes, BytesMut};
use http::header::CONTENT_LENGTH;
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::http::error::{Kind, Reject};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Whether a body failed because a read timeout around the service gave up on it (S24): an
/// `io::ErrorKind::TimedOut` error, as hyper and `serve` report one, found in the source chain.
fn timed_out(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(err);
    while let Some(err) = cause {
        if err
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut)
        {
            return true;
        }
        cause = err.source();
    }
    false
}

/// Reads the body, never buffering more than `limit` bytes (S3).
pub(crate) async fn read_body<B>(
    headers: &http::HeaderMap,
    body: B,
    limit: usize,
) -> Result<Bytes, Reject>
where
    B: http_body::Body + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Into<BoxError>,
{
    let too_large = || {
        Reject::new(
            Kind::PayloadTooLarge,
            format!("body larger than {limit} bytes"),
        )
    };
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    let failed = |err: BoxError| {
        if err.downcast_ref::<LengthLimitError>().is_some() {
            too_large()
        } else if timed_out(&*err) {
            Reject::new(Kind::RequestTimeout, "the body did not arrive in time")
        } else {
            Reject::bad_request(format!("could not read the body: {err}"))
        }
    };
    // Most bodies come in one piece, kept as it is; more are joined.
    let mut body = std::pin::pin!(Limited::new(body, limit));
    let mut first = Bytes::new();
    let mut joined: Option<BytesMut> = None;
    while let Some(frame) = body.as_mut().frame().await {
        let Ok(mut data) = frame.map_err(failed)?.into_data() else {
            continue;
        };
        let chunk = data.copy_to_bytes(data.remaining());
        match &mut joined {
            Some(all) => all.extend_from_slice(&chunk),
            None if first.is_empty() => first = chunk,
            None => {
                let mut all = BytesMut::with_capacity(first.len() + chunk.len());
                all.extend_from_slice(&first);
                all.extend_from_slice(&chunk);
                joined = Some(all);
            }
        }
    }
    Ok(joined.map_or(first, BytesMut::freeze))
}
