//! What a listen stream carries: the notification types its client opted in to, each opt-in
//! (a server sends no type the client did not ask for).

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value, json};

use crate::listen::change::Change;

/// The notification types of one listen stream: `params.notifications` of
/// `subscriptions/listen`, or what a server supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SubscriptionFilter {
    /// `toolsListChanged`.
    pub tools_list_changed: bool,
    /// `promptsListChanged`.
    pub prompts_list_changed: bool,
    /// `resourcesListChanged`.
    pub resources_list_changed: bool,
    /// `resourceSubscriptions`: the URIs whose updates the client wants.
    pub resource_subscriptions: BTreeSet<String>,
}

/// The notification types a server's listen streams carry: a type asked for and not supported
/// is left out of the acknowledgement, as the specification says. Everything by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Supported {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated`, for the URIs a stream subscribes to.
    pub resource_updates: bool,
}

impl Default for Supported {
    fn default() -> Supported {
        Supported {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_updates: true,
        }
    }
}

/// Why a listen request's filter is refused: its `params.notifications` is missing or names
/// what is not a notification type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FilterError {
    /// `params.notifications` is missing or not an object.
    Missing,
    /// A key that names no notification type.
    Unknown(String),
    /// A known key with a value of the wrong type.
    Invalid(&'static str),
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FilterError::Missing => f.write_str(
                "subscriptions/listen needs params.notifications, an object of the types wanted",
            ),
            FilterError::Unknown(key) => write!(
                f,
                "params.notifications names {key:?}, which is not a notification type: use \
                 toolsListChanged, promptsListChanged, resourcesListChanged or \
                 resourceSubscriptions"
            ),
            FilterError::Invalid(key) => match *key {
                RESOURCE_SUBSCRIPTIONS => {
                    write!(f, "params.notifications.{key} must be an array of URIs")
                }
                _ => write!(f, "params.notifications.{key} must be true or false"),
            },
        }
    }
}

impl std::error::Error for FilterError {}

const TOOLS: &str = "toolsListChanged";
const PROMPTS: &str = "promptsListChanged";
const RESOURCES: &str = "resourcesListChanged";
const RESOURCE_SUBSCRIPTIONS: &str = "resourceSubscriptions";

impl SubscriptionFilter {
    /// The filter of a listen request's `params`.
    pub fn from_params(params: Option<&Value>) -> Result<SubscriptionFilter, FilterError> {
        let object = params
            .and_then(|p| p.get("notifications"))
            .and_then(Value::as_object)
            .ok_or(FilterError::Missing)?;
        let mut filter = SubscriptionFilter::default();
        for (key, value) in object {
            match key.as_str() {
                TOOLS => filter.tools_list_changed = flag(TOOLS, value)?,
                PROMPTS => filter.prompts_list_changed = flag(PROMPTS, value)?,
                RESOURCES => filter.resources_list_changed = flag(RESOURCES, value)?,
                RESOURCE_SUBSCRIPTIONS => filter.resource_subscriptions = uris(value)?,
                _ => return Err(FilterError::Unknown(key.clone())),
            }
        }
        Ok(filter)
    }

    /// What of `self` (asked) a server that supports `supported` agrees to.
    pub(crate) fn agreed(&self, supported: &Supported) -> SubscriptionFilter {
        SubscriptionFilter {
            tools_list_changed: self.tools_list_changed && supported.tools_list_changed,
            prompts_list_changed: self.prompts_list_changed && supported.prompts_list_changed,
            resources_list_changed: self.resources_list_changed && supported.resources_list_changed,
            resource_subscriptions: match supported.resource_updates {
                true => self.resource_subscriptions.clone(),
                false => BTreeSet::new(),
            },
        }
    }

    /// Whether a stream with this filter is told of `change`.
    pub fn admits(&self, change: &Change) -> bool {
        match change {
            Change::ToolsListChanged => self.tools_list_changed,
            Change::PromptsListChanged => self.prompts_list_changed,
            Change::ResourcesListChanged => self.resources_list_changed,
            Change::ResourceUpdated(uri) => self.resource_subscriptions.contains(uri),
        }
    }

    /// Every change this filter admits: what a stream that may have missed some is told.
    pub(crate) fn everything(&self) -> Vec<Change> {
        let flags = [
            (self.tools_list_changed, Change::ToolsListChanged),
            (self.prompts_list_changed, Change::PromptsListChanged),
            (self.resources_list_changed, Change::ResourcesListChanged),
        ];
        let lists = flags.into_iter().filter_map(|(on, c)| on.then_some(c));
        let updates = self
            .resource_subscriptions
            .iter()
            .map(|uri| Change::ResourceUpdated(uri.clone()));
        lists.chain(updates).collect()
    }

    /// The filter as `params.notifications` writes it: the types on, and no others.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        for (key, on) in [
            (TOOLS, self.tools_list_changed),
            (PROMPTS, self.prompts_list_changed),
            (RESOURCES, self.resources_list_changed),
        ] {
            if on {
                object.insert(key.to_owned(), Value::Bool(true));
            }
        }
        if !self.resource_subscriptions.is_empty() {
            object.insert(
                RESOURCE_SUBSCRIPTIONS.to_owned(),
                json!(self.resource_subscriptions),
            );
        }
        Value::Object(object)
    }
}

fn flag(key: &'static str, value: &Value) -> Result<bool, FilterError> {
    value.as_bool().ok_or(FilterError::Invalid(key))
}

fn uris(value: &Value) -> Result<BTreeSet<String>, FilterError> {
    let invalid = || FilterError::Invalid(RESOURCE_SUBSCRIPTIONS);
    let items = value.as_array().ok_or_else(invalid)?;
    items
        .iter()
        .map(|item| item.as_str().map(str::to_owned).ok_or_else(invalid))
        .collect()
}
