//! `deploy/`: the container image's definition and the Kubernetes manifests, read and checked
//! against `echo_server` itself: three replicas with `--redis`, a Redis, a Service without
//! session affinity, probes on paths the server answers, ports that match the flags, only
//! flags (and `MCP_*` variables) the server accepts, and a pod's IP of either family advertised
//! to the other nodes. The image is not built here: that needs a container tool and its base
//! images' registry.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde::Deserialize as _;
use serde_json::Value;

use mcp_streamable_redis::testing::RedisServer;

use super::{EchoServer, Http};
use crate::faults::{Node, Scratch};

fn deploy() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

/// Every document of every manifest `deploy/kubernetes/kustomization.yaml` lists (what
/// `kubectl apply -k` applies).
fn manifests() -> Vec<Value> {
    let dir = deploy().join("kubernetes");
    let text = std::fs::read_to_string(dir.join("kustomization.yaml")).unwrap();
    let kustomization: Value = serde_norway::from_str(&text).unwrap();
    let mut documents = Vec::new();
    for resource in kustomization["resources"].as_array().unwrap() {
        let path = dir.join(resource.as_str().unwrap());
        let text = std::fs::read_to_string(&path).unwrap();
        for document in serde_norway::Deserializer::from_str(&text) {
            let value =
                Value::deserialize(document).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            documents.push(value);
        }
    }
    documents
}

fn find<'a>(documents: &'a [Value], kind: &str, name: &str) -> &'a Value {
    documents
        .iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in deploy/kubernetes"))
}

/// `echo_server --help`: every flag and variable it takes.
fn help() -> String {
    let output = crate::faults::echo_server_command()
        .arg("--help")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(output.status.success());
    String::from_utf8(output.stdout).unwrap()
}

/// The echo server container's arguments.
fn args(container: &Value) -> Vec<&str> {
    container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect()
}

/// The value of `--name=` among `args`.
fn flag<'a>(args: &[&'a str], name: &str) -> &'a str {
    let prefix = format!("--{name}=");
    args.iter()
        .find_map(|a| a.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no --{name}= in {args:?}"))
}

/// The port of an `IP:PORT` value.
fn port(addr: &str) -> u64 {
    addr.rsplit_once(':').unwrap().1.parse().unwrap()
}

/// The container port named `name`.
fn container_port(container: &Value, name: &str) -> u64 {
    let ports = container["ports"].as_array().unwrap();
    let port = ports.iter().find(|p| p["name"] == name);
    port.and_then(|p| p["containerPort"].as_u64())
        .unwrap_or_else(|| panic!("no container port {name}"))
}

#[tokio::test]
async fn kubernetes_runs_three_echo_servers_on_redis_behind_a_service_without_affinity() {
    let documents = manifests();
    let kinds: BTreeSet<_> = documents
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, BTreeSet::from(["Deployment", "Service"]));
    let echo = find(&documents, "Deployment", "echo-server");
    assert_eq!(echo["spec"]["replicas"], 3);
    let pod = &echo["spec"]["template"]["spec"];
    let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(
        grace > 5,
        "SIGTERM's grace must exceed serve's 5 s for requests in flight"
    );
    let container = &pod["containers"][0];
    let args = args(container);
    let flag = |name: &str| flag(&args, name);
    // The flags are echo_server's, and the ports they name are the container's.
    let help = help();
    for arg in &args {
        let name = arg.split('=').next().unwrap();
        assert!(
            help.contains(&format!("{name} ")),
            "echo_server takes no {name}"
        );
    }
    for var in container["env"].as_array().unwrap() {
        let name = var["name"].as_str().unwrap();
        if name.starts_with("MCP_") {
            assert!(
                help.contains(&format!("[env: {name}=")),
                "echo_server reads no {name}"
            );
        }
    }
    assert_eq!(port(flag("addr")), container_port(container, "mcp"));
    assert_eq!(port(flag("peer-addr")), container_port(container, "peer"));
    // The pod's IP alone, of either family: reached on the port `--peer-addr` binds.
    assert_eq!(flag("advertise"), "$(POD_IP)");
    assert_eq!(port(flag("metrics")), container_port(container, "metrics"));
    assert!(flag("redis").starts_with("redis://redis:"));
    // The probes' paths are answered by echo_server, on its MCP port.
    let server = EchoServer::start(&[], &[], Stdio::null());
    let http = Http::new();
    for probe in ["livenessProbe", "readinessProbe"] {
        let get = &container[probe]["httpGet"];
        assert_eq!(get["port"], "mcp", "{probe}");
        let path = get["path"].as_str().unwrap();
        let answer = http.get(&server.url(path)).await;
        assert_eq!(answer.status, 200, "{probe} {path}: {}", answer.body);
    }
    // The Service spreads requests over the nodes, with no affinity, to the MCP port.
    let service = find(&documents, "Service", "echo-server");
    assert_eq!(service["spec"]["sessionAffinity"], "None");
    assert_eq!(
        service["spec"]["selector"],
        echo["spec"]["selector"]["matchLabels"]
    );
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "mcp");
    // And the Redis they name.
    let redis = find(&documents, "Service", "redis");
    let redis_port = redis["spec"]["ports"][0]["port"].as_u64().unwrap();
    assert_eq!(flag("redis"), format!("redis://redis:{redis_port}/"));
    find(&documents, "Deployment", "redis");
}

#[test]
fn the_containerfile_runs_echo_server_with_flags_it_takes_on_the_manifests_ports() {
    let text = std::fs::read_to_string(deploy().join("Containerfile")).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect();
    assert!(lines.iter().any(|l| l.contains("--example echo_server")));
    assert!(lines.contains(&r#"ENTRYPOINT ["/usr/local/bin/echo_server"]"#));
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("COPY --from=build")
                && l.ends_with(" /usr/local/bin/echo_server"))
    );
    let help = help();
    let joined = text.replace("\\\n", " ");
    let env = joined
        .lines()
        .find_map(|l| l.strip_prefix("ENV "))
        .expect("an ENV line");
    let mut ports = Vec::new();
    for pair in env.split_whitespace() {
        let (name, value) = pair.split_once('=').unwrap();
        assert!(
            help.contains(&format!("[env: {name}=")),
            "echo_server reads no {name}"
        );
        if name == "MCP_ADDR" || name == "MCP_METRICS" {
            ports.push(port(value).to_string());
        }
    }
    let exposed = lines
        .iter()
        .find_map(|l| l.strip_prefix("EXPOSE "))
        .expect("an EXPOSE line");
    let exposed: Vec<&str> = exposed.split_whitespace().collect();
    for port in ports {
        assert!(exposed.contains(&port.as_str()), "{port} not exposed");
    }
    // The same ports as the manifests'.
    let documents = manifests();
    let container =
        &find(&documents, "Deployment", "echo-server")["spec"]["template"]["spec"]["containers"][0];
    for name in ["mcp", "peer", "metrics"] {
        let port = container_port(container, name).to_string();
        assert!(
            exposed.contains(&port.as_str()),
            "{name} {port} not exposed"
        );
    }
}

/// The manifest's `--advertise` with a pod's IP of either family put in for `$(POD_IP)` (what
/// Kubernetes does), given to a node on a real Redis: the node tells the others that IP, on
/// the port it listens on for them. `$(POD_IP):8081` was no address for an IPv6 pod.
#[test]
fn the_manifests_advertise_takes_a_pod_ip_of_either_family() {
    let documents = manifests();
    let echo = find(&documents, "Deployment", "echo-server");
    let args = args(&echo["spec"]["template"]["spec"]["containers"][0]);
    let advertise = flag(&args, "advertise");
    let redis = RedisServer::start().expect("redis-server starts");
    let dir = Scratch::new("advertise");
    for (name, pod) in [("v4", "10.1.2.3"), ("v6", "fd00::7")] {
        let value = advertise.replace("$(POD_IP)", pod);
        let node = Node::start(
            dir.path(),
            &redis.url(),
            name,
            &[&format!("--advertise={value}")],
        );
        let reached = node.advertised();
        assert_eq!(reached.ip(), pod.parse::<IpAddr>().unwrap(), "{name}");
        assert_ne!(reached.port(), 0, "{name}");
    }
}
