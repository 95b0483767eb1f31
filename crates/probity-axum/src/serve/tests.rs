use super::config::{Budget, DESCRIPTOR_HEADROOM, descriptor_limit};
use super::*;

#[test]
fn probe_paths_match_with_sub_paths_and_queries() {
    let config = ServeConfig::default();
    assert!(config.is_probe_path("/livez"));
    assert!(config.is_probe_path("/readyz/db?verbose"));
    assert!(!config.is_probe_path("/readyzz"));
    assert!(!config.is_probe_path("/orders"));
    let custom = ServeConfig::default().probe_paths(["/internal/live/"]);
    assert!(custom.is_probe_path("/internal/live"));
    assert!(!custom.is_probe_path("/livez"));
}

#[test]
fn the_limit_leaves_room_below_the_descriptor_limit() {
    let limit = ServeConfig::default().connection_limit();
    if let Some(descriptors) = descriptor_limit() {
        assert!((limit as u64) < descriptors);
        // Listeners sharing the process stay under the limit together.
        let shares = [(3, 4), (1, 4)].map(|(parts, of)| {
            let budget = ServeConfig::default()
                .descriptor_share(parts, of)
                .budget(true);
            (budget.ordinary + budget.reserve + budget.admission * 3 / 2) as u64
        });
        assert!(
            shares.iter().sum::<u64>() + DESCRIPTOR_HEADROOM <= descriptors,
            "{shares:?} of {descriptors}"
        );
    }
    assert_eq!(
        ServeConfig::default().max_connections(7).connection_limit(),
        7
    );
}

#[cfg(unix)]
#[test]
fn listeners_of_one_process_share_the_descriptor_limit_by_default() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    // A limit low enough that every share is below the per-listener cap.
    let hard = getrlimit(Resource::Nofile).maximum;
    let soft = hard.map_or(1024, |hard| hard.min(1024));
    setrlimit(
        Resource::Nofile,
        Rlimit {
            current: Some(soft),
            maximum: hard,
        },
    )
    .expect("lower the descriptor limit");
    let used =
        |budget: Budget| (budget.ordinary + budget.reserve + budget.admission * 3 / 2) as u64;

    let alone = ServeConfig::default().budget(true);
    let public = Listening::new(ServeConfig::default());
    assert_eq!(public.refresh_budget(), alone);
    // An admin listener started beside it, both with the default share: each gets half,
    // and together they stay under the limit.
    let admin = Listening::new(ServeConfig::default());
    let (shared, other) = (public.refresh_budget(), admin.refresh_budget());
    assert_eq!(shared, other);
    assert!(
        shared.ordinary < alone.ordinary / 2 + 1,
        "{shared:?} of {alone:?}"
    );
    assert!(
        used(shared) + used(other) + DESCRIPTOR_HEADROOM <= soft,
        "{shared:?} twice of {soft}"
    );
    // A listener with a fixed share takes it; the automatic ones split the rest.
    let scrape = Listening::new(ServeConfig::default().descriptor_share(1, 4));
    let (shared, other, fixed) = (
        public.refresh_budget(),
        admin.refresh_budget(),
        scrape.refresh_budget(),
    );
    assert!(
        used(shared) + used(other) + used(fixed) + DESCRIPTOR_HEADROOM <= soft,
        "{shared:?} {other:?} {fixed:?} of {soft}"
    );
    // When one stops, the others take its room back.
    drop(scrape);
    drop(admin);
    assert_eq!(public.refresh_budget(), alone);
}

/// Once new handshakes are stopped, a client's SYN gets no answer (its connect cannot complete),
/// while a connection the kernel completed before is still in the queue to be taken.
#[cfg(any(target_os = "linux", target_os = "android"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stopped_handshakes_leave_completed_connections_to_be_taken() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let before = std::net::TcpStream::connect(address).unwrap();
    assert!(stop_handshakes(&listener));
    let after = tokio::task::spawn_blocking(move || {
        std::net::TcpStream::connect_timeout(&address, Duration::from_millis(500))
    })
    .await
    .unwrap();
    assert!(
        after.is_err(),
        "a new handshake completed after the filter: {after:?}"
    );
    let taken = take_backlog(&listener);
    assert_eq!(taken.len(), 1, "the connection completed before is taken");
    drop(before);
}
