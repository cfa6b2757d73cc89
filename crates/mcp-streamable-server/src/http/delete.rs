//! DELETE: ending a session, wherever it is held (S16).

use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};

use crate::core::Session;
use crate::core::session::Ending;
use crate::http::app::Server;
use crate::http::checks::{self, owner};
use crate::http::error::Reject;
use crate::http::remote::{self, Ask, Reached};
use crate::http::reply::{self, ResponseBody};
use crate::protocol::transport::TransportHeaders;

/// S16: DELETE ends the session, wherever it is held.
pub(crate) async fn handle<B>(
    server: &Arc<Server>,
    request: Request<B>,
    transport: &TransportHeaders,
) -> Result<Response<ResponseBody>, Reject> {
    let (parts, _body) = request.into_parts();
    let id = checks::named(transport, "DELETE")?;
    let owner = owner(&parts);
    let Some(nodes) = &server.nodes else {
        let session = server.shared.find_session(id, owner.as_ref()).await?;
        return Ok(delete(&session).await);
    };
    let mut ask = Ask::new(id, Method::DELETE, Arc::new(parts), owner);
    match remote::reach(server, nodes, &mut ask, None).await? {
        Reached::Here(session) => Ok(delete(&session).await),
        Reached::There(answer) => Ok(remote::proxied(answer)),
    }
}

/// Ends a session held here.
pub(crate) async fn delete(session: &Arc<Session>) -> Response<ResponseBody> {
    #[cfg(feature = "otel")]
    session.ends_by(crate::core::telemetry::EndCause::Deleted);
    session.close(Ending::Abort).await;
    reply::empty(StatusCode::NO_CONTENT)
}
