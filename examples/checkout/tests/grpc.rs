//! gRPC health on checkout's public port, from tonic's client and from Python's
//! `grpcio-health-checking` (a client nobody here wrote).

mod support;

use futures_util::StreamExt;
use probity_grpc::ServingStatus;
use probity_grpc::pb::health_client::HealthClient;
use probity_grpc::pb::{HealthCheckRequest, HealthListRequest};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{Checkout, post, wait_ready};

fn request(service: &str) -> HealthCheckRequest {
    HealthCheckRequest {
        service: service.to_owned(),
    }
}

async fn client(checkout: &Checkout) -> HealthClient<tonic::transport::Channel> {
    let channel = tonic::transport::Channel::from_shared(checkout.url(""))
        .unwrap()
        .timeout(Duration::from_secs(5))
        .connect()
        .await
        .expect("gRPC connection to the public port");
    HealthClient::new(channel)
}

#[tokio::test]
async fn check_watch_and_list_from_a_tonic_client() {
    let checkout = Checkout::start(&["--chaos"]);
    wait_ready(&checkout).await;
    let mut client = client(&checkout).await;

    for service in ["", "readiness", "liveness", "startup", "db"] {
        let status = client
            .check(request(service))
            .await
            .unwrap()
            .into_inner()
            .status();
        assert_eq!(status, ServingStatus::Serving, "service {service:?}");
    }
    let missing = client.check(request("payments")).await.unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    assert!(
        missing
            .message()
            .contains("known: \"\", liveness, readiness, startup, db")
    );

    let list = client
        .list(HealthListRequest {})
        .await
        .unwrap()
        .into_inner();
    let mut names: Vec<&str> = list.statuses.keys().map(String::as_str).collect();
    names.sort();
    assert_eq!(names, ["", "db", "liveness", "readiness", "startup"]);

    let mut unknown = client
        .watch(request("payments"))
        .await
        .unwrap()
        .into_inner();
    let first = unknown.next().await.unwrap().unwrap();
    assert_eq!(first.status(), ServingStatus::ServiceUnknown);

    let mut watch = client.watch(request("db")).await.unwrap().into_inner();
    assert_eq!(
        watch.next().await.unwrap().unwrap().status(),
        ServingStatus::Serving
    );
    post(&checkout.admin_url("/chaos/leak-connections"), None).await;
    let next = tokio::time::timeout(Duration::from_secs(15), watch.next())
        .await
        .unwrap();
    assert_eq!(next.unwrap().unwrap().status(), ServingStatus::NotServing);
    let liveness = client
        .check(request("liveness"))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(liveness.status(), ServingStatus::Serving);
    post(&checkout.admin_url("/chaos/release-connections"), None).await;
    let next = tokio::time::timeout(Duration::from_secs(15), watch.next())
        .await
        .unwrap();
    assert_eq!(next.unwrap().unwrap().status(), ServingStatus::Serving);

    // The unknown service's stream stayed open all along.
    let more = tokio::time::timeout(Duration::from_millis(300), unknown.next()).await;
    assert!(more.is_err(), "unexpected message or end: {more:?}");

    // Shutdown: everything NOT_SERVING at once, liveness included.
    checkout.signal("TERM");
    let next = tokio::time::timeout(Duration::from_secs(15), watch.next())
        .await
        .unwrap();
    assert_eq!(next.unwrap().unwrap().status(), ServingStatus::NotServing);
    for service in ["", "liveness", "startup", "db"] {
        let status = client
            .check(request(service))
            .await
            .unwrap()
            .into_inner()
            .status();
        assert_eq!(status, ServingStatus::NotServing, "service {service:?}");
    }
}

/// The Python side: prints one line per observation, and waits for a line on stdin before
/// watching for the change the test makes.
const PYTHON_CLIENT: &str = r#"
import sys, grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

name = health_pb2.HealthCheckResponse.ServingStatus.Name
stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(sys.argv[1]))
for service in ["", "readiness", "liveness", "startup", "db"]:
    print("check", service or '""', name(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status))
try:
    stub.Check(health_pb2.HealthCheckRequest(service="payments"), timeout=5)
    print("check payments", "answered")
except grpc.RpcError as error:
    print("check payments", error.code().name)
listed = stub.List(health_pb2.HealthListRequest(), timeout=5)
for service in sorted(listed.statuses):
    print("list", service or '""', name(listed.statuses[service].status))
unknown = stub.Watch(health_pb2.HealthCheckRequest(service="payments"), timeout=2)
print("watch payments", name(next(unknown).status))
try:
    next(unknown)
    print("watch payments", "another message")
except grpc.RpcError as error:
    print("watch payments then", error.code().name)
watch = stub.Watch(health_pb2.HealthCheckRequest(service="db"), timeout=10)
print("watch db", name(next(watch).status))
sys.stdout.flush()
sys.stdin.readline()
print("watch db", name(next(watch).status))
sys.stdout.flush()
"#;

#[tokio::test]
async fn check_watch_and_list_from_pythons_grpcio_health_checking() {
    let Some(python) = support::python_with_grpc_health() else {
        return;
    };
    let checkout = Checkout::start(&["--chaos"]);
    wait_ready(&checkout).await;

    let mut child = Command::new(python)
        .args(["-c", PYTHON_CLIENT, &checkout.listen.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = child.stdout.take().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut child = Kill(child);
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                return;
            }
        }
    });
    let mut next_line = |what: &str| -> String {
        lines_rx
            .recv_timeout(Duration::from_secs(15))
            .unwrap_or_else(|_| {
                let _ = child.0.kill();
                let mut stderr = String::new();
                if let Some(mut pipe) = child.0.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
                }
                panic!("python printed no {what}; its stderr:\n{stderr}")
            })
    };

    let mut seen = Vec::new();
    loop {
        let line = next_line("line");
        let last = line == "watch db SERVING";
        seen.push(line);
        if last {
            break;
        }
    }
    assert_eq!(
        seen,
        [
            r#"check "" SERVING"#,
            "check readiness SERVING",
            "check liveness SERVING",
            "check startup SERVING",
            "check db SERVING",
            "check payments NOT_FOUND",
            r#"list "" SERVING"#,
            "list db SERVING",
            "list liveness SERVING",
            "list readiness SERVING",
            "list startup SERVING",
            "watch payments SERVICE_UNKNOWN",
            "watch payments then DEADLINE_EXCEEDED",
            "watch db SERVING",
        ]
    );

    post(&checkout.admin_url("/chaos/leak-connections"), None).await;
    use std::io::Write;
    writeln!(stdin).unwrap();
    stdin.flush().unwrap();
    assert_eq!(next_line("transition"), "watch db NOT_SERVING");
}
