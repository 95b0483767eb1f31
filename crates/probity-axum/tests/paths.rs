//! Probe paths a team already serves (`/internal/live` + `/internal/ready`, `/healthz/live` +
//! `/healthz/ready`): the router serves them with their sub-paths, `?verbose` and the 404
//! listing, the messages name them, the default paths are free for the application, and the
//! contract shows them.

use axum::Router;
use axum::body::Body;
use axum::routing::get;
use http::{Request, StatusCode};
use http_body_util::BodyExt;
use probity::{CheckError, CheckSpec, Detail, Health, ProbeKind, ProbePaths, Tier};
use probity_axum::Probes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tower::ServiceExt;

const LAYOUTS: [[&str; 3]; 2] = [
    ["/internal/live", "/internal/ready", "/internal/startup"],
    ["/healthz/live", "/healthz/ready", "/healthz/startup"],
];

async fn get_text(router: &Router, uri: &str) -> (StatusCode, String) {
    let response = router
        .clone()
        .oneshot(Request::get(uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

fn service(paths: ProbePaths, db_up: &Arc<AtomicBool>) -> Health {
    let up = db_up.clone();
    Health::builder()
        .service("shop")
        .paths(paths)
        .check(
            CheckSpec::new("db", Tier::Hard, move || {
                let up = up.load(Ordering::SeqCst);
                async move {
                    if up {
                        Ok(Detail::new())
                    } else {
                        Err(CheckError::new("connection refused"))
                    }
                }
            })
            .interval(Duration::from_secs(1))
            .timeout(Duration::from_millis(500))
            .fall(1)
            .rise(1),
        )
        .startup_step("warmup")
        .build()
        .expect("valid health")
}

#[tokio::test(start_paused = true)]
async fn every_probe_answers_at_the_paths_the_service_chose() {
    for [live, ready, startup] in LAYOUTS {
        let db_up = Arc::new(AtomicBool::new(true));
        let health = service(ProbePaths::new(live, ready, startup).unwrap(), &db_up);
        health.start().unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // The application keeps the default paths for itself.
        let app = Router::new()
            .route("/readyz", get(|| async { "the application's own /readyz" }))
            .merge(Probes::new(&health).router());

        let (status, body) = get_text(&app, startup).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{startup}: {body}");
        let (status, body) = get_text(&app, ready).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{ready}: {body}");
        assert!(body.contains("[-]startup failed"), "{body}");
        health.complete_step("warmup").unwrap();

        assert_eq!(get_text(&app, live).await, (StatusCode::OK, "ok\n".into()));
        assert_eq!(get_text(&app, ready).await, (StatusCode::OK, "ok\n".into()));
        assert_eq!(
            get_text(&app, startup).await,
            (StatusCode::OK, "ok\n".into())
        );
        assert_eq!(
            get_text(&app, &format!("{ready}/db")).await,
            (StatusCode::OK, "ok\n".into())
        );
        assert_eq!(
            get_text(&app, &format!("{startup}/warmup")).await,
            (StatusCode::OK, "ok\n".into())
        );
        assert_eq!(
            get_text(&app, "/readyz").await,
            (StatusCode::OK, "the application's own /readyz".into())
        );
        for default in ["/livez", "/startupz", "/readyz/db"] {
            assert_eq!(
                get_text(&app, default).await.0,
                StatusCode::NOT_FOUND,
                "{default}"
            );
        }

        // `?verbose` ends with the endpoint's own word, as the Kubernetes API server's do.
        let (status, body) = get_text(&app, &format!("{ready}?verbose")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("[+]db ok"), "{body}");
        assert!(body.ends_with("ready check passed\n"), "{body}");
        let (_, body) = get_text(&app, &format!("{live}?verbose")).await;
        assert!(body.ends_with("live check passed\n"), "{body}");

        // An unknown entry: 404 naming the configured path and listing what exists.
        let (status, body) = get_text(&app, &format!("{ready}/nothing")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(
            body.starts_with(&format!("no check `nothing` in {ready}\n")),
            "{body}"
        );
        assert!(body.contains("known: ") && body.contains("db"), "{body}");
        let (status, body) = get_text(&app, &format!("{ready}?exclude=nothing")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(
            body.contains(&format!("no such entry in {ready}")),
            "{body}"
        );

        // A failing check fails the configured readiness path, naming the check.
        db_up.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let (status, body) = get_text(&app, ready).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(body, "[-]db failed: refused\nready check failed\n");
        assert_eq!(get_text(&app, live).await.0, StatusCode::OK);

        // The contract shows the paths, for the linter and the simulator.
        let contract = health.contract();
        let path_of = |probe: ProbeKind| {
            contract
                .endpoints
                .iter()
                .find(|endpoint| endpoint.probe == probe)
                .map(|endpoint| endpoint.path.clone())
        };
        assert_eq!(path_of(ProbeKind::Liveness).as_deref(), Some(live));
        assert_eq!(path_of(ProbeKind::Readiness).as_deref(), Some(ready));
        assert_eq!(path_of(ProbeKind::Startup).as_deref(), Some(startup));
        let json = serde_json::to_string(&contract).unwrap();
        assert!(json.contains(&format!("\"path\":\"{ready}\"")), "{json}");
        health.stop();
    }
}

#[test]
fn paths_that_cannot_be_served_are_refused_at_build_time() {
    for (paths, fragment) in [
        (
            ("/internal/live", "/internal/live", "/s"),
            "not equal to or under",
        ),
        (("/health", "/health/ready", "/s"), "not equal to or under"),
        (("internal/live", "/r", "/s"), "starts with `/`"),
        (("/live/", "/r", "/s"), "does not end with `/`"),
        (("/live?x=1", "/r", "/s"), "no query"),
    ] {
        let error = ProbePaths::new(paths.0, paths.1, paths.2).unwrap_err();
        assert!(
            error.to_string().contains(fragment),
            "{paths:?}: `{error}` should say `{fragment}`"
        );
    }
}
