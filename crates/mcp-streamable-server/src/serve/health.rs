//! The liveness and readiness probes `serve` answers before the service sees a request (H1).

use http::{Method, Request, StatusCode};

use crate::http::service::StreamableHttpService;
use crate::serve::options::Options;

/// The answer to `request` if it is a probe: its status and plain-text body.
pub(crate) fn probe<B>(
    options: &Options,
    service: &StreamableHttpService,
    request: &Request<B>,
) -> Option<(StatusCode, String)> {
    let path = request.uri().path();
    let live = options.liveness_path.as_deref() == Some(path);
    let ready = options.readiness_path.as_deref() == Some(path);
    if !live && !ready {
        return None;
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        return Some((
            StatusCode::METHOD_NOT_ALLOWED,
            "probes are GET or HEAD\n".into(),
        ));
    }
    if live {
        return Some((StatusCode::OK, "ok\n".into()));
    }
    let readiness = service.readiness();
    let status = if readiness.is_ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Some((status, format!("{readiness}\n")))
}
