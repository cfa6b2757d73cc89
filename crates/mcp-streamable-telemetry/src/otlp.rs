//! OTLP/HTTP: the encoding the standard variable asks for, the two exporters, and their HTTP
//! client (hyper's, on the runtime that installed them: the batch span processor and the
//! periodic reader export from threads of their own).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use opentelemetry_otlp::{
    MetricExporter, Protocol, SpanExporter, WithExportConfig as _, WithHttpConfig as _,
};

use crate::Error;

/// OpenTelemetry's standard variable: where OTLP goes, each signal's path appended.
pub const OTLP_ENDPOINT: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";

/// OpenTelemetry's standard variable for OTLP's encoding: `http/protobuf` (the default) or
/// `http/json`; gRPC is not built in.
pub const OTLP_PROTOCOL: &str = "OTEL_EXPORTER_OTLP_PROTOCOL";

/// The encoding `OTEL_EXPORTER_OTLP_PROTOCOL` asks for. Always said to the exporters, never
/// left to their default: that default follows the crate features the whole build enabled.
pub(crate) fn protocol() -> Result<Protocol, Error> {
    parse(std::env::var(OTLP_PROTOCOL).ok().as_deref())
}

fn parse(value: Option<&str>) -> Result<Protocol, Error> {
    match value {
        None | Some("" | "http/protobuf") => Ok(Protocol::HttpBinary),
        Some("http/json") => Ok(Protocol::HttpJson),
        Some(other) => Err(Error::Protocol(other.to_owned())),
    }
}

pub(crate) fn spans(protocol: Protocol) -> Result<SpanExporter, Error> {
    SpanExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_http_client(OnRuntime::new())
        .build()
        .map_err(|e| Error::Exporter("OTLP span exporter", e.into()))
}

pub(crate) fn metrics(protocol: Protocol) -> Result<MetricExporter, Error> {
    MetricExporter::builder()
        .with_http()
        .with_protocol(protocol)
        .with_http_client(OnRuntime::new())
        .build()
        .map_err(|e| Error::Exporter("OTLP metric exporter", e.into()))
}

/// The exporters' HTTP client: hyper's, its requests spawned on the runtime that built it.
#[derive(Debug, Clone)]
struct OnRuntime {
    client: Client<HttpConnector, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
}

impl OnRuntime {
    fn new() -> OnRuntime {
        OnRuntime {
            client: Client::builder(TokioExecutor::new()).build_http(),
            runtime: tokio::runtime::Handle::current(),
        }
    }
}

type Sent = Result<hyper::Response<Bytes>, opentelemetry_http::HttpError>;

impl opentelemetry_http::HttpClient for OnRuntime {
    fn send_bytes<'a, 'b>(
        &'a self,
        request: hyper::Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Sent> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let client = self.client.clone();
        let sent = self.runtime.spawn(async move {
            let response = client.request(request.map(Full::new)).await?;
            let (parts, body) = response.into_parts();
            let body = body.collect().await?.to_bytes();
            Ok::<_, opentelemetry_http::HttpError>(hyper::Response::from_parts(parts, body))
        });
        Box::pin(async move { sent.await? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protobuf_unless_json_is_asked_for_and_nothing_else() {
        assert_eq!(parse(None).unwrap(), Protocol::HttpBinary);
        assert_eq!(parse(Some("")).unwrap(), Protocol::HttpBinary);
        assert_eq!(parse(Some("http/protobuf")).unwrap(), Protocol::HttpBinary);
        assert_eq!(parse(Some("http/json")).unwrap(), Protocol::HttpJson);
        let refused = parse(Some("grpc")).unwrap_err().to_string();
        assert!(
            refused.contains("OTEL_EXPORTER_OTLP_PROTOCOL=grpc"),
            "{refused}"
        );
        assert!(refused.contains("http/protobuf") && refused.contains("http/json"));
    }
}
