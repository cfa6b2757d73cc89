//! Starting a child and linking to it: the command, the set of children alive, and the bound
//! on the lines read from them, which every child shares.

use mcp_jsonrpc::Message;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::link::Link;
use crate::options::Command;
use crate::process::Children;

/// Starts the children, all of one command.
pub(crate) struct Starter {
    pub(crate) command: Command,
    pub(crate) children: Children,
    max_line: usize,
}

impl Starter {
    pub(crate) fn new(command: Command, children: Children, max_line: usize) -> Self {
        Starter {
            command,
            children,
            max_line,
        }
    }

    /// Starts a child labelled `label` (its session's id, in the log) and links to it; the
    /// receiver yields the child's own messages.
    pub(crate) fn start(&self, label: &str) -> Result<(Link, mpsc::Receiver<Message>), Error> {
        let spawned = self.children.spawn(&self.command, label)?;
        Ok(Link::start(spawned, self.max_line, label))
    }
}
