#![doc = include_str!("../README.md")]
#![forbid(missing_docs)]
#![deny(missing_debug_implementations)]

mod client;
mod connect;
mod error;
mod stream;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(feature = "rustls")]
pub mod tls;

pub use client::{
    Client, ClientBuilder, DEFAULT_MAX_BODY_BYTES, DEFAULT_TIMEOUT, HttpClient, ResponseFuture,
};
pub use connect::{Connecting, Connector};
pub use error::{BoxError, Error};
pub use stream::Stream;
