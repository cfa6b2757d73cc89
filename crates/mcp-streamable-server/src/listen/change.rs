//! What a listen stream is told: a list changed, or a resource was updated.

use mcp_jsonrpc::{Id, Message, Notification};
use serde_json::json;

use crate::protocol::meta;

/// A change the server announces to the clients listening (`subscriptions/listen`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Change {
    /// The tools changed: `notifications/tools/list_changed`.
    ToolsListChanged,
    /// The prompts changed: `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// The resources changed: `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// The resource at this URI changed: `notifications/resources/updated`.
    ResourceUpdated(String),
}

impl Change {
    /// The method of the notification that tells it.
    pub fn method(&self) -> &'static str {
        match self {
            Change::ToolsListChanged => "notifications/tools/list_changed",
            Change::PromptsListChanged => "notifications/prompts/list_changed",
            Change::ResourcesListChanged => "notifications/resources/list_changed",
            Change::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }

    /// The form a [`NotificationBus`](crate::NotificationBus) carries between nodes: a word,
    /// or `resource ` and the URI.
    pub fn to_wire(&self) -> String {
        match self {
            Change::ToolsListChanged => "tools".to_owned(),
            Change::PromptsListChanged => "prompts".to_owned(),
            Change::ResourcesListChanged => "resources".to_owned(),
            Change::ResourceUpdated(uri) => format!("resource {uri}"),
        }
    }

    /// A change from its wire form; `None` for what is not one (a newer node's, say).
    pub fn from_wire(wire: &[u8]) -> Option<Change> {
        let text = std::str::from_utf8(wire).ok()?;
        Some(match text {
            "tools" => Change::ToolsListChanged,
            "prompts" => Change::PromptsListChanged,
            "resources" => Change::ResourcesListChanged,
            _ => Change::ResourceUpdated(text.strip_prefix("resource ")?.to_owned()),
        })
    }

    /// The notification on the listen stream `subscription` (the listen request's id).
    pub(crate) fn notification(&self, subscription: &Id) -> Message {
        let mut params = json!({"_meta": {meta::SUBSCRIPTION_ID: subscription}});
        if let Change::ResourceUpdated(uri) = self {
            params["uri"] = json!(uri);
        }
        let params = mcp_jsonrpc::to_raw_value(&params).ok();
        Message::Notification(Notification::new(self.method(), params))
    }
}
