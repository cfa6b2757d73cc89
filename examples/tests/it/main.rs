//! Integration tests of the example servers' applications, driven through a
//! `StreamableHttpService` without sockets (`svc.handle(request)`, then the body collected), and
//! of the example servers' command lines, run as processes.

mod cli;
mod echo;
mod faults;
mod nodes;
mod oauth;
mod ops;
mod per_request;
mod protected;
