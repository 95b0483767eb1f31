//! Tests of `pod`.

use super::*;
use std::path::Path;

/// A container whose app forks: a shell that starts `sleep` as a child, writes the child's
/// pid, and waits for it — as `mlflow server` waits for its web server.
fn forking_pod(dir: &Path) -> Arc<Pod> {
    let app = Program {
        command: vec![
            "sh".into(),
            "-c".into(),
            "sleep 300 & echo $! > child.pid.tmp && mv child.pid.tmp child.pid; wait".into(),
        ],
        env: Vec::new(),
        workdir: dir.to_owned(),
        log: dir.join("app.log"),
    };
    let ports = Ports {
        app: 1,
        named: BTreeMap::new(),
        agent: None,
    };
    let spec = ResolvedPod {
        grace_period: Duration::from_secs(5),
        ..ResolvedPod::default()
    };
    Pod::new(
        0,
        "forks-1".into(),
        ports,
        app,
        None,
        spec,
        Events::default(),
    )
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "probity-pod-{name}-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A process's state letter from `/proc` (`R`, `S`, `T` stopped, `Z` zombie), `None` once
/// it is gone.
fn state_of(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) S …`: the state follows the last `)`.
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

fn alive(pid: u32) -> bool {
    state_of(pid).is_some_and(|state| state != 'Z' && state != 'X')
}

/// The pid of the newest child once the shell wrote it (the file is replaced per start).
async fn child_pid(dir: &Path, not: Option<u32>) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = std::fs::read_to_string(dir.join("child.pid"))
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .filter(|pid| Some(*pid) != not)
        {
            return pid;
        }
        assert!(
            Instant::now() < deadline,
            "the app never wrote its child's pid"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while alive(pid) {
        assert!(
            Instant::now() < deadline,
            "process {pid} outlived its container (state {:?})",
            state_of(pid)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits until `pid` is stopped (`T`) or not, as wanted: a signal takes effect a moment
/// after it is sent.
async fn stopped(pid: u32, wanted: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while (state_of(pid) == Some('T')) != wanted {
        assert!(
            Instant::now() < deadline,
            "process {pid}: state {:?}, stopped wanted {wanted}",
            state_of(pid)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn running_again(pod: &Pod, not: u32) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(pid) = pod.pid().filter(|pid| *pid != not) {
            return pid;
        }
        assert!(Instant::now() < deadline, "no new container");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signals_reach_the_app_s_children_and_none_outlives_its_container() {
    let dir = scratch("signals");
    let pod = forking_pod(&dir);
    pod.start().await.unwrap();
    let leader = pod.pid().unwrap();
    let child = child_pid(&dir, None).await;

    // A wedge freezes the child too, and thawing resumes it.
    let frozen = pod.freeze().unwrap();
    stopped(child, true).await;
    stopped(leader, true).await;
    frozen.thaw();
    stopped(child, false).await;
    stopped(leader, false).await;

    // A crash takes the child with it; the kubelet starts a new container.
    std::fs::remove_file(dir.join("child.pid")).unwrap();
    pod.crash().unwrap();
    gone(child).await;
    gone(leader).await;
    let leader = running_again(&pod, leader).await;
    let child = child_pid(&dir, Some(child)).await;

    // A rollout's SIGTERM reaches the container's main process only (as the runtime's stop
    // signal reaches PID 1); when it exits, the rest of the container goes with it.
    std::fs::remove_file(dir.join("child.pid")).unwrap();
    pod.replace().await.unwrap();
    gone(child).await;
    gone(leader).await;
    let child = child_pid(&dir, Some(child)).await;

    // The end of the drill, even with the container frozen.
    let frozen = pod.freeze().unwrap();
    pod.shutdown().await;
    gone(child).await;
    frozen.thaw();
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn nothing_outlives_a_drill_dropped_mid_run() {
    // A panic unwinding out of the drill, or Ctrl-C, drops the drill's runtime with the
    // pod in it and no shutdown.
    let dir = scratch("dropped");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (leader, child) = runtime.block_on(async {
        let pod = forking_pod(&dir);
        pod.start().await.unwrap();
        let leader = pod.pid().unwrap();
        (leader, child_pid(&dir, None).await)
    });
    assert!(alive(child));
    drop(runtime);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while alive(child) || alive(leader) {
        assert!(
            std::time::Instant::now() < deadline,
            "a process outlived the drill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_program_is_found_where_the_kernel_would_find_it_or_named_as_missing() {
    let dir = std::env::temp_dir().join(format!("probity-find-program-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("bin")).expect("scratch folder");
    let program = dir.join("bin/app");
    std::fs::write(&program, "#!/bin/sh\n").expect("write");
    let plain = dir.join("bin/data");
    std::fs::write(&plain, "").expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");

    // Relative to the working directory, and on PATH (a relative PATH entry from it too).
    assert_eq!(find_program("bin/app", &dir, None), Ok(program.clone()));
    assert_eq!(
        find_program("app", &dir, Some(std::ffi::OsStr::new("/nonexistent:bin"))),
        Ok(dir.join("bin").join("app"))
    );
    assert_eq!(
        find_program("sh", &dir, std::env::var_os("PATH").as_deref()).map(|p| p.is_file()),
        Ok(true)
    );
    // Missing, or there but not executable: said which.
    assert_eq!(
        find_program("/nonexistent/checkout", &dir, None),
        Err(format!(
            "`/nonexistent/checkout` not found (from {})",
            dir.display()
        ))
    );
    assert_eq!(
        find_program("bin/data", &dir, None),
        Err("`bin/data` is not an executable file".to_owned())
    );
    assert_eq!(
        find_program("data", &dir, Some(std::ffi::OsStr::new("bin"))),
        Err("`data` not found on PATH".to_owned())
    );
    let _ = std::fs::remove_dir_all(dir);
}
