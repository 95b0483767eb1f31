//! Every rule's id, severity, why and fix: the single source of `--explain`, SARIF rule metadata
//! and `docs/lint-rules.md`.
//!
//! The incidents cited are the ones probity is built from, named for what happened: the
//! pool-leak incident (one instance's pool leaked, `/health` kept answering 200 and the instance
//! kept a third of the traffic for 26 minutes), the database-blip crash loop (a 40 s blip with
//! the database check on liveness became a 7-minute crash loop), the silent database outage (ten
//! minutes of failures with every system reporting healthy), the restart storm (a 40 s failover
//! killed all twelve replicas at once: 14 minutes of outage), the model-load crash loop (a 90 s
//! model load against a liveness probe that gave up at about 30 s), the deep-check load (fifty
//! pods probing a deep check every 2 s sent 25 queries/s to the database) and the flapping fleet
//! (pods leaving and rejoining every 30 s).

use super::{Rule, Scope, Severity};

/// Liveness and readiness probe the same handler.
pub const IDENTICAL_LIVENESS_READINESS: Rule = Rule {
    id: "identical-liveness-readiness",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "liveness and readiness probe the same handler",
    why: "Liveness asks \"should this container be restarted?\" and readiness asks \"should it get \
traffic now?\"; the right answers differ exactly when a dependency fails. One endpoint for both \
either checks nothing (the pool-leak incident: a broken instance kept a third of the traffic for \
26 minutes because `/health` could not fail) or checks the dependency and restarts the whole \
fleet during a blip (the database-blip crash loop: a 40 s blip became a 7-minute crash loop; the \
silent database outage: ten minutes with every system reporting healthy). The comparison is on \
the handler after resolving named ports against the container's `ports` (kube-score's \
`pod-probes-identical` compares `Port.IntValue()`, which is 0 for every named port, and ignores \
gRPC).",
    fix: "Serve two endpoints: liveness on one that checks only the process itself (`/livez`: \
runtime stall, deadlock, unrecoverable state) and readiness on one that checks what a request \
needs (`/readyz`, read from a cached snapshot). Point each probe at its own endpoint.",
};

/// Liveness (or startup) on an endpoint that checks dependencies.
pub const LIVENESS_CHECKS_DEPENDENCIES: Rule = Rule {
    id: "liveness-checks-dependencies",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "a probe that restarts the container calls an endpoint that checks dependencies",
    why: "Kubernetes' only response to a failed liveness or startup probe is to kill the \
container (`pkg/kubelet/kuberuntime/kuberuntime_manager.go` `computePodActions`). A restart \
cannot fix a database, cache or downstream service, so when a shared dependency fails every \
replica fails together and is killed together: in the restart storm a 40 s database failover \
killed all 12 replicas at once and became a 14-minute outage; in the database-blip crash loop a \
40 s blip crash-looped the fleet for 7 minutes. Whether the endpoint checks dependencies is read \
from the service's contract (`--contract FILE`, or the `probity.dev/contract` annotation: an \
endpoint with `checks_dependencies: true`) or from the `probity.dev/dependency-endpoints` \
annotation.",
    fix: "Point liveness (and startup) at an endpoint that checks only the process itself \
(`/livez`) and move dependency checks to readiness, which drains the pod instead of killing it \
and recovers by itself when the dependency returns.",
};

/// A probe that cannot fail.
pub const PROBE_CANNOT_FAIL: Rule = Rule {
    id: "probe-cannot-fail",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a probe that passes whatever the process does",
    why: "A check that cannot fail is not a check: if no condition makes it report failure, it \
removes no broken instance from rotation and restarts no wedged one (the pool-leak incident: \
`/health` answered 200 for 26 minutes while every request failed). The kubelet counts an exec \
probe as passing when the command exits 0 (`pkg/probe/exec/exec.go`), so `true`, `exit 0`, \
`echo ok`, `cat /proc/1/status`, `test -d /proc/1`, `ls /`, `… || true`, `…; exit 0`, a \
pipeline ending in `cat`, or `ps aux | grep app` (the shell running it is in the process list \
with `app` on its command line) pass as long as the container exists. A readiness probe on an \
endpoint that the service's contract says checks nothing can only fail when the process is gone, \
which the kubelet already knows.",
    fix: "Make the probe test what its question needs: liveness an internal condition a restart \
fixes (a stalled runtime, a deadlock), readiness what a request needs (`/readyz` from a cached \
snapshot). For exec probes, let the real check's exit status through: drop `|| true` and \
`exit 0`, use `set -o pipefail`, `curl -f`, `grep -q` on real output.",
};

/// A check in a health endpoint that calls another service's health endpoint.
pub const TRANSITIVE_HEALTH_CHECK: Rule = Rule {
    id: "transitive-health-check",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "a probe's answer depends on another service's health endpoint",
    why: "In the restart storm the liveness endpoint also fetched the payments service's \
`/health`: \"if the payments service is unhealthy, every service that checks it becomes \
unhealthy, and everything checking those becomes unhealthy\". A health check that calls another \
service's health endpoint turns one service's trouble into every caller's: on readiness the \
callers drain themselves (a full outage of a service that could have degraded), on liveness they \
are restarted together. \"Never check a transitive dependency in a health check. Your health is \
about you.\" Found from the manifest alone (an exec probe that runs `curl`, `wget` or \
`grpc_health_probe` against another host's health path or `grpc.health.v1`; an `httpGet` whose \
`host` is another Service), from the contract (a check with `calls_health_endpoint: true` on the \
probed endpoint) or from the `probity.dev/transitive-endpoints` annotation.",
    fix: "Remove the other service's health from this service's probes. Handle that dependency \
where requests use it: timeouts, circuit breakers, a degraded response; if readiness must know, \
check the dependency your requests actually call (its API, from a cached poller), not its health \
endpoint.",
};

/// timeoutSeconds ≥ periodSeconds.
pub const TIMEOUT_NOT_BELOW_PERIOD: Rule = Rule {
    id: "timeout-not-below-period",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a probe's timeout is not shorter than its period",
    why: "The kubelet probes on a `time.Ticker` that drops ticks while a probe runs \
(`pkg/kubelet/prober/worker.go`): with `timeoutSeconds` ≥ `periodSeconds` a slow endpoint is \
probed back to back, the detection time becomes failureThreshold × timeout instead of \
failureThreshold × period, and a hanging handler piles work up in the process (\"a timeout \
longer than the probe interval piles probes on top of each other … give every check a timeout \
strictly shorter than the interval\"). Kubernetes defaults are period 10 s, timeout 1 s. Both \
at 1 s is not reported: 1 is the least either may be (`validateProbe`), so no timeout is shorter \
than a 1 s period, and back-to-back probes are then the cadence chosen.",
    fix: "Make `timeoutSeconds` shorter than `periodSeconds` (the endpoint should answer from a \
cached snapshot in milliseconds, so the default 1 s is usually right); `--fix` sets it to one \
second below the period, the longest timeout that no longer overlaps the next probe.",
};

/// A large initialDelaySeconds on liveness instead of a startup probe.
pub const INITIAL_DELAY_INSTEAD_OF_STARTUP_PROBE: Rule = Rule {
    id: "initial-delay-instead-of-startup-probe",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "liveness waits out the boot with `initialDelaySeconds` longer than its own failure \
window",
    why: "A liveness delay longer than the probe's own tolerance (`failureThreshold × \
periodSeconds`) says the boot takes longer than the probe can wait for, and the delay is what \
covers it: a guess at the boot time. Too short and a slower boot crash-loops (the database-blip \
crash loop: \"cold starts take 35s and the probe grace was 20s\"; the model-load crash loop); too \
long and a process that wedges right after every restart goes undetected for the whole delay \
(\"a bad trade because it also delays detection of a genuinely wedged process\"). A \
`startupProbe` (GA in Kubernetes 1.20) gates liveness and readiness until the boot has finished, \
whatever it takes, up to its budget, and then liveness detects at its normal cadence. A delay no \
longer than the failure window (the documentation's own examples use 15 s against 3 × 10 s) is a \
small head start, not a boot-time guess, and is not reported.",
    fix: "Replace the delay with a `startupProbe` on the liveness endpoint whose `failureThreshold \
× periodSeconds` covers the old delay plus the liveness window; `--fix` inserts exactly that \
(the same handler, `periodSeconds` of at most 5 s) and removes the delay.",
};

/// initialDelaySeconds on liveness/readiness together with a startup probe.
pub const INITIAL_DELAY_WITH_STARTUP_PROBE: Rule = Rule {
    id: "initial-delay-with-startup-probe",
    severity: Severity::Info,
    scope: Scope::Object,
    summary: "`initialDelaySeconds` on liveness or readiness of a container that has a startup probe",
    why: "The documentation says liveness and readiness delays begin after the startup probe \
succeeds, but the kubelet measures `initialDelaySeconds` from the container's start \
(`pkg/kubelet/prober/worker.go`: `time.Since(c.State.Running.StartedAt) < InitialDelaySeconds`) \
and separately waits for `Started`. With a startup probe the delay therefore does nothing when \
the boot is slower than the delay, and only postpones detection when it is faster: it is at best \
a no-op that reads like a guarantee.",
    fix: "Drop `initialDelaySeconds` from the liveness and readiness probes and let the startup \
probe's budget cover the boot (`--fix` removes it).",
};

/// The startup budget is shorter than the declared boot time.
pub const STARTUP_BUDGET_BELOW_BOOT_TIME: Rule = Rule {
    id: "startup-budget-below-boot-time",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "the probes give up before the service's declared boot time",
    why: "A container that has not finished booting when its startup probe (or, without one, its \
liveness probe) runs out of failures is killed and restarted, and boots from scratch again: a \
crash loop that never converges. The budget is `initialDelaySeconds + failureThreshold × \
periodSeconds` of the startup probe, or of the liveness probe when there is no startup probe; the \
default is 3 × 10 = 30 s. In the model-load crash loop a 14-billion-parameter model took 90 s to \
load and \"every deploy crashloops until someone adds a startup probe\"; in the restart storm a \
40 s warm-up met liveness checking from 10 s. The boot time comes from the contract \
(`startup.expected_boot_ms`) or the `probity.dev/boot-seconds` annotation.",
    fix: "Add (or lengthen) a `startupProbe` so that `initialDelaySeconds + failureThreshold × \
periodSeconds` exceeds the worst boot time with a margin, e.g. `periodSeconds: 5, \
failureThreshold: 30` for 150 s.",
};

/// A startup probe on an endpoint that waits on a dependency.
pub const STARTUP_PROBE_WAITS_ON_DEPENDENCY: Rule = Rule {
    id: "startup-probe-waits-on-dependency",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "the startup probe's endpoint waits on an external system",
    why: "A startup probe that runs out of failures kills the container \
(`pkg/kubelet/kuberuntime/kuberuntime_manager.go` `computePodActions`; the event reads \
\"Container … failed startup probe, will be restarted\"). If the endpoint it probes waits for a database connection or \
another service, a dependency outage longer than the startup budget kills every new pod of a \
rollout, scale-up or node replacement, over and over, with CrashLoopBackOff's growing delays \
between tries: the restart storm, where replicas \"all tried to connect to a database that was \
still recovering … all failed their startup, and got killed again\", and the outage outlived the \
failover by a factor of twenty. A boot step that waits on a dependency belongs to readiness \
(which holds traffic back and recovers by itself); the startup endpoint should wait only on \
the process's own boot. Read from the contract: the endpoint's `waits_on` lists dependencies.",
    fix: "Point the startup probe at an endpoint that waits only on internal boot steps (probity's \
`/startupz` when dependency steps gate readiness only), and let readiness wait for the \
dependency.",
};

/// Liveness gives up before readiness.
pub const LIVENESS_WINDOW_SHORTER_THAN_READINESS: Rule = Rule {
    id: "liveness-window-shorter-than-readiness",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "liveness gives up before readiness: a stalled pod is killed while it still gets \
traffic",
    why: "When the process stalls (a pause, an overload, a wedge), both probes fail together, \
since they are answered by the same process. With liveness' `failureThreshold × periodSeconds` \
shorter than readiness', the kubelet kills the container while the Service still routes to it: \
requests in flight and arriving during the kill fail, and a stall that would have ended within \
the readiness window becomes a restart instead of a drain. Kubernetes' probe guide recommends \
the reverse: a higher `failureThreshold` for liveness, which \"ensures that the pod is observed as \
not-ready for some period of time before it is hard killed\". Equal windows on different endpoints (the \
textbook `/livez` and `/readyz`) are not reported: then a dependency failure fails readiness \
alone, and a stall takes the pod out of both at the same moment.",
    fix: "Give liveness a failure window at least as long as readiness', preferably longer, e.g. \
readiness `periodSeconds: 5, failureThreshold: 2` and liveness `periodSeconds: 10, \
failureThreshold: 3`.",
};

/// The liveness window is too short to ride out a pause.
pub const LIVENESS_WINDOW_TOO_SHORT: Rule = Rule {
    id: "liveness-window-too-short",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "the liveness failure window is too short to ride out a pause",
    why: "A liveness probe kills on `failureThreshold` consecutive failures, each at most \
`periodSeconds` apart. A garbage-collection pause, a CPU-throttled burst, a slow disk or a busy \
event loop makes a healthy process miss a few probes; a window shorter than such a pause \
restarts healthy pods, and under load it restarts them at the worst moment, shedding capacity \
into an overload (liveness is for \"a deadlocked event loop … an endless garbage collection \
pause\", not a momentary one). `failureThreshold: 1` kills on a single missed probe.",
    fix: "Keep `failureThreshold × periodSeconds` of liveness at 10 s or more with \
`failureThreshold` of at least 2; the defaults (3 × 10 s) are a good start.",
};

/// Readiness 1/1 with a short period: flapping.
pub const READINESS_FLAPPING: Rule = Rule {
    id: "readiness-flapping",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "readiness flips on a single result with a short period",
    why: "With `successThreshold: 1` and `failureThreshold: 1` every single probe result moves the \
pod in or out of the Service's endpoints; with a short period and a dependency that comes and goes \
the pod flaps. In the flapping fleet \"pods leave and rejoin every thirty seconds, connection \
pools reset, cache warmups rerun, latency spikes, retries cascade\" — hysteresis (fall fast, rise \
slow) is the fix. The kubelet counts consecutive identical results (`pkg/kubelet/prober/worker.go`), \
so the thresholds are the probe's hysteresis.",
    fix: "Require several successes to come back: `successThreshold: 2` or 3 (allowed on \
readiness only), and `failureThreshold: 2` or more; keep per-dependency hysteresis in the \
service as well.",
};

/// Values the API server rejects.
pub const REJECTED_BY_API_SERVER: Rule = Rule {
    id: "rejected-by-api-server",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "a value the Kubernetes API server rejects",
    why: "Schema validation (kubeconform, IDE schemas) does not catch these: the generated JSON \
schemas carry no such constraints, and the API server enforces them in \
`pkg/apis/core/validation/validation.go`: `successThreshold` \"must be 1\" on liveness and startup \
probes; `terminationGracePeriodSeconds` \"must not be set for readinessProbes\" and must be \
positive elsewhere; a probe \"may not specify more than 1 handler type\" and must specify one; \
periods, timeouts, thresholds and delays may not be negative; an `httpGet` or `tcpSocket` port is \
a number from 1 to 65535 or a port name of at most 15 lowercase letters, digits and dashes with at \
least one letter (`ValidatePortNumOrName`: a quoted `\"8080\"` is a name, and an invalid one); an \
init container that runs to completion may not have probes (\"may not be set for init containers \
without restartPolicy=Always\"; a sidecar may); a lifecycle hook has exactly one handler, and a \
`preStop` `sleep` action lasts at most the pod's `terminationGracePeriodSeconds` \
(`validateSleepAction`: \"must be non-negative and less than terminationGracePeriodSeconds\"); \
a pod's `terminationGracePeriodSeconds` may not be negative; and a value of the wrong type \
(`periodSeconds: \"10\"`) fails to decode. The apply fails, or, through tools that drop what they \
cannot decode, the probe silently differs from what was written.",
    fix: "Correct the value as the message says: `successThreshold: 1` on liveness and startup \
(`--fix` sets it), no `terminationGracePeriodSeconds` on readiness (`--fix` removes it), exactly \
one of `httpGet`, `tcpSocket`, `grpc` or `exec`, non-negative integers, an unquoted port number \
or a valid port name; probes only on sidecar init containers (`restartPolicy: Always`).",
};

/// Unknown fields (typos).
pub const UNKNOWN_FIELD: Rule = Rule {
    id: "unknown-field",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "a field Kubernetes does not know, usually a typo",
    why: "A misspelt field such as `initialDelaySecond` or `failureTreshold` is dropped by every \
decoder that is not in strict mode (the API server only warns by default, Helm and many \
controllers never look), so the probe runs with the default the author meant to change. Typed \
Kubernetes clients drop unknown fields too (`k8s-openapi` deserializes them into `IgnoredAny`). \
The linter walks probes, handlers, containers, lifecycle hooks, pod specs, workload specs, \
Services and PodDisruptionBudgets against the Kubernetes API's field lists (for a custom \
workload, only its pod template's containers, whose fields Kubernetes defines).",
    fix: "Correct the spelling (the message suggests the nearest known field, and `--fix` renames \
the key when the field is not already set) or remove the field.",
};

/// Probe host set to localhost or a Service name.
pub const PROBE_HOST_NOT_POD: Rule = Rule {
    id: "probe-host-not-pod",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a probe's `host` sends it somewhere other than the pod",
    why: "The kubelet sends HTTP and TCP probes to the pod IP unless `host` is set \
(`pkg/probe/http/http.go`). It resolves `host` from the node, not from the pod: `localhost` or \
`127.0.0.1` probes the node itself (unless the pod uses `hostNetwork`), and a Service or other DNS \
name probes whichever pod the Service picks, so the result says nothing about this container and \
a broken pod stays in rotation (\"a check that passes over one path can fail over the other\"). \
A `host` naming another Service's health endpoint is reported as `transitive-health-check`.",
    fix: "Remove `host`; to send a virtual-host name, set an `httpHeaders` entry `Host: …` \
instead.",
};

/// A named probe port that does not resolve.
pub const PROBE_PORT_NOT_DECLARED: Rule = Rule {
    id: "probe-port-not-declared",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a probe names a port the container does not declare",
    why: "The kubelet resolves a named probe port against the probed container's own `ports`, not \
its sidecars' (`pkg/kubelet/prober/prober.go` `extractPort` → `findPortByName`); a name the \
container does not declare fails to resolve, and the probe errors on every attempt: a liveness probe restarts the \
container forever, a readiness probe keeps it out of rotation forever. A named port declared \
with `protocol: UDP` resolves, but the probe speaks TCP to it. A numeric port needs no \
declaration — `ports` is informational (\"Not specifying a port here DOES NOT prevent that port \
from being exposed\") — so a number the container does not list is not reported.",
    fix: "Use a port name the container declares in `ports` (with `protocol: TCP`), or the port \
number.",
};

/// gRPC probe on a named port.
pub const GRPC_NAMED_PORT: Rule = Rule {
    id: "grpc-named-port",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "a gRPC probe names its port",
    why: "`grpc.port` is an `int32`, not an int-or-string like `httpGet.port`: gRPC probes \
\"don't support named ports\" (KEP-2727, GA in Kubernetes 1.27). The API server rejects the \
manifest.",
    fix: "Write the port number in `grpc.port` (`--fix` writes the number the name resolves to \
in the container's `ports`).",
};

/// Grace period 0, or shorter than the preStop sleep.
pub const GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP: Rule = Rule {
    id: "grace-period-leaves-no-time-for-prestop",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "the grace period cuts the `preStop` hook short",
    why: "The kubelet runs `preStop` inside the grace period, not before it: it waits for the hook \
at most `gracePeriod` seconds, subtracts the time it took, and then sends SIGTERM with whatever \
is left, raised to a 2 s floor (`pkg/kubelet/kuberuntime/kuberuntime_container.go` \
`killContainer`, `executePreStopHook`, `minimumGracePeriodInSeconds = 2`). A preStop hook that \
sleeps longer than `terminationGracePeriodSeconds` (default 30 s) — an exec `sleep`, which the API \
server cannot see into; a `sleep` action that long is rejected outright and reported as \
`rejected-by-api-server` — is cut at the grace period, so the delay it was meant to give load \
balancers is lost and the process gets 2 s to finish. \
`terminationGracePeriodSeconds: 0` is worse: the API documents it as \"stop immediately via the \
kill signal (no opportunity to shut down)\"; the API server deletes the pod at once \
(`pkg/registry/core/pod/strategy.go` `CheckGracefulDelete`), a replacement starts while the old \
process still runs, and the kubelet gives the hook at most 1 s (`pkg/kubelet/pod_workers.go`: \
\"no matter what, we always supply a grace period of 1\").",
    fix: "Set `terminationGracePeriodSeconds` above the preStop sleep plus the time the process \
needs after SIGTERM (its drain and in-flight deadline), or shorten the sleep.",
};

/// Grace period shorter than preStop sleep plus drain delay.
pub const GRACE_PERIOD_BELOW_DRAIN: Rule = Rule {
    id: "grace-period-below-drain",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "`terminationGracePeriodSeconds` is shorter than the preStop sleep plus the drain",
    why: "On deletion the kubelet runs `preStop`, then sends SIGTERM, and sends SIGKILL when \
`terminationGracePeriodSeconds` (default 30 s) has passed since the start, preStop included \
(`pkg/kubelet/kuberuntime/kuberuntime_container.go` `killContainer`; the pod-lifecycle \
\"Termination of Pods\" page). A service that keeps serving while load balancers notice it is \
leaving (the drain delay) and then finishes in-flight requests needs preStop + drain + in-flight \
time; a shorter grace period kills it mid-drain and the requests still routed to it fail. The \
drain delay comes from the contract (`shutdown.drain_delay_ms` and `in_flight_deadline_ms`) or \
the `probity.dev/drain-delay-seconds` annotation; a grace period shorter than the preStop sleep \
alone is reported as `grace-period-leaves-no-time-for-prestop`.",
    fix: "Raise `terminationGracePeriodSeconds` above preStop sleep + drain delay + in-flight \
deadline, with a few seconds to spare, or shorten the sleep or the drain.",
};

/// Drain delay shorter than the readiness window.
pub const DRAIN_DELAY_BELOW_READINESS_WINDOW: Rule = Rule {
    id: "drain-delay-below-readiness-window",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "the service stops listening before its failing readiness has taken it out of \
rotation",
    why: "On SIGTERM a service that drains properly fails readiness at once and keeps serving for \
a drain delay, because whoever routes by that readiness only notices after `failureThreshold` \
failed probes `periodSeconds` apart, plus the time the change takes to reach the load balancers \
(EndpointSlice updates, kube-proxy and ingress resyncs, an external balancer's own checks). If \
the drain delay — plus any preStop sleep, during which the process still serves — is shorter \
than `periodSeconds × failureThreshold` of the readiness probe plus that propagation, traffic \
still arrives after the listener has closed and fails with connection refused or reset, at every \
rollout and scale-down. The drain delay comes from the contract (`shutdown.drain_delay_ms`, with \
the propagation from `drain_delay_derivation.load_balancer_reaction_ms` when it says) or the \
`probity.dev/drain-delay-seconds` annotation; the propagation is taken as 2 s when nothing says.",
    fix: "Set the drain delay to at least readiness `periodSeconds × failureThreshold` + the \
propagation (the message states the number), or shorten the readiness window; keep the grace \
period above the new delay plus the in-flight deadline.",
};

/// No readiness probe on a pod behind a Service.
pub const MISSING_READINESS_PROBE: Rule = Rule {
    id: "missing-readiness-probe",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a pod behind a Service has no readiness probe",
    why: "Without a readiness probe a container is Ready as soon as it starts \
(`pod-lifecycle.md` \"Types of probe\": the default state is Success), so the Service's \
EndpointSlice sends it traffic before it can serve and keeps sending traffic while it cannot: in \
the pool-leak incident the broken instance kept a third of the traffic for 26 minutes, in the \
silent database outage the fleet served errors for 10. Only the Service's selection makes it \
matter, so the rule fires for workloads a Service in the same input selects, unless every port \
of that Service serves metrics (`metrics`, `http-metrics`, `prometheus` by name or target port): \
Prometheus' Kubernetes discovery scrapes endpoints whether they are ready or not, so there is no \
traffic for readiness to steer.",
    fix: "Add a `readinessProbe` on an endpoint that checks what a request needs (`/readyz`), \
answered from a cached snapshot.",
};

/// publishNotReadyAddresses on a Service whose pods rely on readiness.
pub const PUBLISH_NOT_READY_ADDRESSES: Rule = Rule {
    id: "publish-not-ready-addresses",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "`publishNotReadyAddresses` makes the selected pods' readiness probes meaningless",
    why: "The EndpointSlice controller marks every endpoint ready when the Service sets \
`publishNotReadyAddresses: true` (`staging/src/k8s.io/endpointslice/utils.go` `podToEndpoint`: \
`ready := service.Spec.PublishNotReadyAddresses || …`), so kube-proxy keeps routing to pods whose \
readiness probe fails: the probes run, fail, and change nothing. It is meant for peer discovery \
in headless Services (databases finding each other before they are ready), not for Services that \
carry client traffic.",
    fix: "Remove `publishNotReadyAddresses` from the client-facing Service; if peers need to find \
each other early, give them a separate headless Service.",
};

/// PDB blocks every drain.
pub const PDB_BLOCKS_EVERY_DRAIN: Rule = Rule {
    id: "pdb-blocks-every-drain",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a PodDisruptionBudget allows no voluntary eviction at all",
    why: "With `minAvailable` at or above the replica count, or `maxUnavailable: 0`, the eviction \
API refuses every eviction of the selected pods, so `kubectl drain`, node upgrades and cluster \
autoscaler scale-down hang until someone deletes the budget by hand — which is when budgets get \
deleted and forgotten. A budget exists to keep some pods while others move (after the restart \
storm the fix added `minAvailable: 50%` so \"not everything can be unavailable \
simultaneously\"). An autoscaled workload is judged at its HorizontalPodAutoscaler's \
`minReplicas`, where the budget bites hardest.",
    fix: "Allow at least one disruption: `maxUnavailable: 1`, or a `minAvailable` below the \
replica count (a percentage such as `50%` follows scaling).",
};

/// PDB protects nothing.
pub const PDB_PROTECTS_NOTHING: Rule = Rule {
    id: "pdb-protects-nothing",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a PodDisruptionBudget allows every selected pod to be evicted at once",
    why: "`minAvailable: 0` (or `0%`), or a `maxUnavailable` at or above the replica count, lets \
a node drain evict every replica at the same time. The budget looks like protection but does \
nothing; after the restart storm a budget was added precisely so \"not everything can be \
unavailable simultaneously\" during voluntary disruptions such as node drains.",
    fix: "Set `minAvailable` to the capacity that must survive a drain (e.g. `50%`) or \
`maxUnavailable: 1`.",
};

/// No PDB for a multi-replica workload.
pub const PDB_MISSING: Rule = Rule {
    id: "pdb-missing",
    severity: Severity::Info,
    scope: Scope::Object,
    summary: "a multi-replica workload has no PodDisruptionBudget in the same input",
    why: "Without a budget a node drain or upgrade may evict every replica at once (several can \
share a node), turning maintenance into an outage. The restart storm's fix added \
`minAvailable: 50%`; it \"does not prevent liveness kills … and it does protect against \
voluntary disruptions like node drains\". Informational, because the budget may live in another \
repository.",
    fix: "Add a PodDisruptionBudget selecting the workload's pods with `maxUnavailable: 1` or a \
`minAvailable` percentage.",
};

/// Probe load at fleet size.
pub const PROBE_LOAD: Rule = Rule {
    id: "probe-load",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "health checking costs too much at the workload's replica count",
    why: "Probe load scales with the fleet: per pod it is the sum of 1 / `periodSeconds` over its \
liveness and readiness probes, and across the fleet it is that times the replica count (the \
HorizontalPodAutoscaler's `maxReplicas` when one targets the workload). In the deep-check load, \
\"one probe every two seconds across fifty pods is twenty-five queries per second hitting your \
database\", and \"2000 pods with both probes at 2-second intervals is 2000 requests per second of \
healthcheck traffic\". Dependency load is counted per dependency: a probe on an endpoint that \
checks dependencies on each request (`probity.dev/dependency-endpoints`) reaches every one of \
them, and for a service with a contract each poller reaches its dependency once per interval per \
replica, whatever the probe period. Thresholds: `--max-probe-rps` (default 1000) and \
`--max-dependency-rps` (default 20, per dependency).",
    fix: "Lengthen `periodSeconds` (readiness every 5–10 s is plenty when the endpoint answers \
from a snapshot), serve probes from a cached snapshot filled by pollers so dependencies see one \
check per poll interval, and lengthen the pollers' intervals for large fleets.",
};

/// A sidecar that answers the application's probes has no startup probe.
pub const SIDECAR_WITHOUT_STARTUP_PROBE: Rule = Rule {
    id: "sidecar-without-startup-probe",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a sidecar that answers the application's probes has no startup probe",
    why: "A native sidecar (an init container with `restartPolicy: Always`, GA in Kubernetes \
1.33) gates the containers after it only through its startup probe: the kubelet starts the next \
container once the sidecar is *started*, which is its `startupProbe` passing, or, without one, \
its process running (`pkg/kubelet/kuberuntime/kuberuntime_manager.go` \
`computeInitContainerActions`; <https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/>). \
When the application's probes call a port the sidecar serves (a health agent such as `probity \
agent`, a proxy that answers for the application), the application starts, and its probes \
begin, while the sidecar may not listen yet: readiness fails for nothing, and a liveness or \
startup probe that gives up restarts the application for the sidecar's slow start.",
    fix: "Give the sidecar a `startupProbe` on an endpoint that answers once it listens (the \
agent's `/agent/livez`), with a budget (`failureThreshold × periodSeconds`) that covers its \
start.",
};

/// A sidecar's readiness probe gates the pod's readiness.
pub const SIDECAR_READINESS_GATES_POD: Rule = Rule {
    id: "sidecar-readiness-gates-pod",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a sidecar's readiness probe is a second gate on the pod's readiness",
    why: "A pod is Ready only when every container is, native sidecars included \
(`pkg/kubelet/status/generate.go` `GeneratePodReadyCondition`; \"the readiness probe of a \
sidecar container contributes to the readiness of the Pod\", \
<https://kubernetes.io/docs/concepts/workloads/pods/sidecar-containers/>). A sidecar's readiness \
probe therefore takes the pod out of every Service whenever the sidecar has a problem of its \
own: a database proxy whose readiness checks that it can reach the database drains the whole \
fleet during a database outage, including the requests that never touch the database (the \
Cloud SQL Auth Proxy's own guide advises against a readiness probe on it \"under most \
circumstances\"). When the application's readiness is already answered by the sidecar (a health \
agent), a different readiness on the sidecar is a second gate that is not the application's. \
Not reported when the sidecar asks what an application container's readiness asks, for a mesh \
proxy that carries all of the pod's inbound traffic (`istio-proxy`, `linkerd-proxy`), or in Jobs.",
    fix: "Remove the sidecar's `readinessProbe` and keep its `startupProbe` (which gates the \
application's start) and `livenessProbe`; let the application's readiness say whether it can \
serve, including through the sidecar. Another proxy that carries all of the pod's inbound \
traffic may keep its readiness: suppress the rule on the workload, saying so.",
};

/// The grace period does not cover the application's drain and then the sidecars' exit.
pub const GRACE_PERIOD_BELOW_SIDECAR_EXIT: Rule = Rule {
    id: "grace-period-below-sidecar-exit",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "the grace period covers the application's drain but not the sidecars' exit after it",
    why: "Native sidecars are stopped after the application's containers have exited, in \
reverse order, inside the same `terminationGracePeriodSeconds` \
(`pkg/kubelet/kuberuntime/kuberuntime_termination_order.go`): a sidecar's preStop hook starts \
only when the application is gone, and gets what is left of the grace period, at least \
`minimumGracePeriodInSeconds` (`kuberuntime_container.go` `killContainer`). A grace period \
sized for the application alone leaves a sidecar that needs time to exit (a preStop sleep \
that lets its last connections finish, a log shipper flushing) killed mid-exit. The \
application's share is its preStop sleep plus its drain (`probity.dev/drain-delay-seconds` or \
its contract); a sidecar's is its preStop `sleep`.",
    fix: "Set `terminationGracePeriodSeconds` to at least the application's preStop sleep and \
drain plus the sidecars' preStop sleeps, or shorten the sidecars' sleeps: the application \
already stopped taking traffic by then.",
};

/// A PodDisruptionBudget lets unready pods block node drains.
pub const PDB_UNREADY_PODS_BLOCK_DRAINS: Rule = Rule {
    id: "pdb-unready-pods-block-drains",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a PodDisruptionBudget whose unready pods block node drains",
    why: "Without `unhealthyPodEvictionPolicy: AlwaysAllow` (GA in Kubernetes 1.31) the policy \
is `IfHealthyBudget`: a running pod that is not Ready may be evicted only while the budget is \
met (`pkg/registry/core/pod/storage/eviction.go`). Readiness that checks a shared dependency \
fails on every replica at once during that dependency's outage, so the budget is not met and \
none of the unready pods can be evicted: `kubectl drain`, node upgrades and autoscaler \
scale-down hang on pods that serve nothing. Kubernetes recommends `AlwaysAllow` \
(<https://kubernetes.io/docs/tasks/run-application/configure-pdb/#unhealthy-pod-eviction-policy>). \
Reported for budgets that select a workload with a readiness probe; a budget that selects no \
workload in the input is not judged.",
    fix: "Add `unhealthyPodEvictionPolicy: AlwaysAllow` to the budget's `spec`: unready pods can \
always be evicted, Ready ones stay protected.",
};

/// A TCP probe under an Istio sidecar without the probe rewrite.
pub const TCP_PROBE_PASSES_UNDER_ISTIO: Rule = Rule {
    id: "tcp-probe-passes-under-istio",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "a TCP probe under Istio's sidecar with the probe rewrite turned off",
    why: "Istio redirects every inbound connection into its sidecar proxy, \"and so all TCP \
ports appear open. The kubelet simply checks if some process is listening on the specified \
port, and so the probe will always succeed as long as the sidecar is running\" \
(<https://istio.io/latest/docs/ops/configuration/mesh/app-health-check/>). Istio's injector \
fixes this by rewriting the pod's probes to go through pilot-agent, which makes the connection \
itself, past the redirection, with the probe's own `timeoutSeconds` (it used a fixed 10 s \
until Istio 1.6: istio/istio#18242, fixed by #21615). `sidecar.istio.io/rewriteAppHTTPProbers: \
\"false\"` on the pod turns the rewrite off, and a TCP probe then cannot fail: a wedged or \
crashed-but-restarting application keeps its traffic and is never restarted. Judged on pods \
whose template turns the rewrite off and does not turn injection off \
(`sidecar.istio.io/inject: \"false\"`).",
    fix: "Remove `sidecar.istio.io/rewriteAppHTTPProbers: \"false\"` (the rewrite is on in every \
built-in profile), or probe an HTTP or gRPC endpoint that the application itself answers.",
};

/// An Istio pod setting written on the workload's metadata.
pub const ISTIO_SETTING_ON_WORKLOAD: Rule = Rule {
    id: "istio-setting-on-workload",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "an Istio pod setting is written on the workload, where Istio ignores it",
    why: "Istio's injector sees pods, not Deployments: \"make sure to add the annotation to the \
pod resource because it will be ignored anywhere else (for example, on an enclosing deployment \
resource)\" (<https://istio.io/latest/docs/ops/configuration/mesh/app-health-check/>). \
`sidecar.istio.io/rewriteAppHTTPProbers` or `sidecar.istio.io/inject` on a workload's own \
`metadata` therefore changes nothing: probes are rewritten (or not) and the sidecar injected \
(or not) as the mesh and the namespace decide, while the manifest reads otherwise.",
    fix: "Move the setting to the pod template (`spec.template.metadata.annotations`; \
`sidecar.istio.io/inject` as a label in `spec.template.metadata.labels`).",
};

/// An invalid probity.dev annotation or suppression.
pub const INVALID_ANNOTATION: Rule = Rule {
    id: "invalid-annotation",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a `probity.dev/` annotation the linter cannot use, or a suppression without a reason",
    why: "A suppression is a decision someone must be able to review later: \
`probity.dev/ignore-RULE: \"<reason>\"` records why the rule does not apply to this object. An \
empty reason, an unknown rule id or an unreadable value (`probity.dev/boot-seconds: soon`) \
silently changes what is checked, so the annotation is reported and, for a suppression, not \
honoured.",
    fix: "Write the reason as the annotation's value, use a rule id that `probity lint --explain` \
knows, or correct the value as the message says.",
};

/// A key written twice in one mapping.
pub const DUPLICATE_KEY: Rule = Rule {
    id: "duplicate-key",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a key written twice in one mapping: only the last value counts",
    why: "YAML forbids a repeated key, but the API server's decoder (`sigs.k8s.io/yaml` in \
non-strict mode) accepts it with a warning and keeps the last value, so the first one is \
silently discarded: an environment variable, a probe setting or a label that the author can see \
in the file is not what runs. Strict tools (`kubectl apply --validate=strict`, kubeconform \
`-strict`) refuse the whole document. A real rendered Helm chart repeated \
`CARTS_DYNAMODB_CREATETABLE` in a ConfigMap this way.",
    fix: "Keep one occurrence of the key, with the value that should win; `--fix` removes the \
first one, which is the one that is ignored today.",
};

/// A document that is not valid YAML.
pub const INVALID_YAML: Rule = Rule {
    id: "invalid-yaml",
    severity: Severity::Error,
    scope: Scope::Document,
    summary: "a document that is not valid YAML",
    why: "The API server refuses a document it cannot parse, and so does every tool after it; \
nothing in it is applied. The linter reports where parsing stopped, skips to the next `---` and \
judges the other documents of the stream: one broken document (a Helm template that rendered \
badly, a merge conflict marker) never hides the mistakes in the rest of the file.",
    fix: "Correct the YAML at the position shown (an unclosed bracket or quote, a tab in the \
indentation, a key at the wrong depth), or render the template before linting it.",
};

/// A document that parses but is not a Kubernetes object.
pub const NOT_A_KUBERNETES_OBJECT: Rule = Rule {
    id: "not-a-kubernetes-object",
    severity: Severity::Info,
    scope: Scope::Document,
    summary: "a document that is not a Kubernetes object, so nothing in it is judged",
    why: "Every Kubernetes object is a mapping with a string `apiVersion` and `kind` \
(`k8s.io/apimachinery` `TypeMeta`); without them `kubectl apply` refuses the document. Usually \
the file is not a manifest at all (a Helm `values.yaml`, a `Chart.yaml`, a CI file picked up by \
a folder walk), or the document lost its header in an edit. Either way the linter cannot judge \
it, and says so rather than passing it silently; informational, because walking a repository \
meets such files without anything being wrong (when no document at all can be read, the run \
exits 2).",
    fix: "Lint rendered manifests (`helm template … | probity lint -`), leave files that are not \
manifests out of the paths given, or restore the document's `apiVersion` and `kind`.",
};

/// Every rule, in the order the reference lists them.
pub const ALL: &[&Rule] = &[
    &IDENTICAL_LIVENESS_READINESS,
    &LIVENESS_CHECKS_DEPENDENCIES,
    &PROBE_CANNOT_FAIL,
    &TRANSITIVE_HEALTH_CHECK,
    &TIMEOUT_NOT_BELOW_PERIOD,
    &INITIAL_DELAY_INSTEAD_OF_STARTUP_PROBE,
    &INITIAL_DELAY_WITH_STARTUP_PROBE,
    &STARTUP_BUDGET_BELOW_BOOT_TIME,
    &STARTUP_PROBE_WAITS_ON_DEPENDENCY,
    &LIVENESS_WINDOW_SHORTER_THAN_READINESS,
    &LIVENESS_WINDOW_TOO_SHORT,
    &READINESS_FLAPPING,
    &REJECTED_BY_API_SERVER,
    &UNKNOWN_FIELD,
    &PROBE_HOST_NOT_POD,
    &PROBE_PORT_NOT_DECLARED,
    &GRPC_NAMED_PORT,
    &GRACE_PERIOD_LEAVES_NO_TIME_FOR_PRESTOP,
    &GRACE_PERIOD_BELOW_DRAIN,
    &GRACE_PERIOD_BELOW_SIDECAR_EXIT,
    &DRAIN_DELAY_BELOW_READINESS_WINDOW,
    &MISSING_READINESS_PROBE,
    &PUBLISH_NOT_READY_ADDRESSES,
    &PDB_BLOCKS_EVERY_DRAIN,
    &PDB_PROTECTS_NOTHING,
    &PDB_MISSING,
    &PDB_UNREADY_PODS_BLOCK_DRAINS,
    &PROBE_LOAD,
    &SIDECAR_WITHOUT_STARTUP_PROBE,
    &SIDECAR_READINESS_GATES_POD,
    &TCP_PROBE_PASSES_UNDER_ISTIO,
    &ISTIO_SETTING_ON_WORKLOAD,
    &INVALID_ANNOTATION,
    &DUPLICATE_KEY,
    &INVALID_YAML,
    &NOT_A_KUBERNETES_OBJECT,
];
