//! Integration tests of the example servers' applications, driven through a
//! `StreamableHttpService` without sockets (`svc.handle(request)`, then the body collected).

#[path = "../../support/echo_app.rs"]
#[allow(dead_code)] // The tests use only part of what the example uses.
mod echo_app;

#[path = "../../support/proxy.rs"]
mod proxy;

#[path = "../../support/serve.rs"]
#[allow(dead_code)] // The tests serve through `run`, never until Ctrl-C.
mod serve;

#[path = "../../support/browser.rs"]
#[allow(dead_code)] // The tests follow redirects themselves; `Headless` is the example's.
mod browser;

mod echo;
mod faults;
mod nodes;
mod oauth;
mod protected;
