//! The `params._meta` keys of the per-request revision (2026-07-28).

/// The protocol version a per-request message is written in.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's capabilities (an object), carried by every per-request request.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// Who the client is (`{name, version}`).
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Who the server is (`{name, version}`), in a result's `_meta`.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The listen stream a notification was delivered on: the id of the `subscriptions/listen`
/// request that opened it.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
