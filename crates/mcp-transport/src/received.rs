//! A received message, with the HTTP request that carried it.

use std::sync::Arc;

use mcp_jsonrpc::Message;

/// A message from the peer, with the parts of the HTTP request that carried it when the
/// transport has them ([`Connection::recv_with_request`](crate::Connection::recv_with_request)).
///
/// The parts are shared: every message of one HTTP request (a 2025-03-26 batch, say) points
/// to the same ones. Their extensions hold what middleware put there, an authenticated
/// principal among it.
///
/// ```
/// use mcp_jsonrpc::Notification;
/// use mcp_transport::Received;
///
/// let received = Received::new(Notification::new("notifications/initialized", None).into());
/// assert!(received.request.is_none());
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Received {
    /// The message.
    pub message: Message,
    /// The HTTP request's parts, or `None` for a transport without HTTP requests.
    pub request: Option<Arc<http::request::Parts>>,
}

impl Received {
    /// A message that came with no HTTP request.
    pub fn new(message: Message) -> Self {
        Received {
            message,
            request: None,
        }
    }

    /// The same message, carried by `request`.
    pub fn with_request(mut self, request: Arc<http::request::Parts>) -> Self {
        self.request = Some(request);
        self
    }
}
