//! Every rule's id, severity, why and fix: the single source of `--explain`, SARIF rule metadata
//! and `docs/lint-rules.md`.

use super::{Rule, Scope, Severity};

/// Liveness and readiness probe the same handler.
pub const IDENTICAL_LIVENESS_READINESS: Rule = Rule {
    id: "identical-liveness-readiness",
    severity: Severity::Error,
    scope: Scope::Object,
    summary: "liveness and readiness probe the same handler",
    why: "Liveness asks \"should this container be restarted?\" and readiness asks \"should it get \
traffic now?\"; the right answers differ exactly when a dependency fails. One endpoint for both \
either checks nothing (seed 000, incident 1: a broken instance kept a third of the traffic for \
26 minutes because `/health` could not fail) or checks the dependency and restarts the whole fleet \
during a blip (seed 000, incident 2: a 40 s database blip became a 7-minute crash loop; seed 001: \
a 10-minute database outage with every system reporting healthy). The comparison is on the \
handler after resolving named ports against the container's `ports` (kube-score's \
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
replica fails together and is killed together: seed 004's 40 s database failover killed all 12 \
replicas at once and became a 14-minute outage; seed 000's 40 s blip crash-looped the fleet for 7 \
minutes. Whether the endpoint checks dependencies is read from the service's contract \
(`--contract FILE`, or the `probity.dev/contract` annotation: an endpoint with \
`checks_dependencies: true`) or from the `probity.dev/dependency-endpoints` annotation.",
    fix: "Point liveness (and startup) at an endpoint that checks only the process itself \
(`/livez`) and move dependency checks to readiness, which drains the pod instead of killing it \
and recovers by itself when the dependency returns.",
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
failureThreshold × period, and a hanging handler piles work up in the process. Seed 003: \"a \
timeout longer than the probe interval piles probes on top of each other … give every check a \
timeout strictly shorter than the interval\". Kubernetes defaults are period 10 s, timeout 1 s.",
    fix: "Make `timeoutSeconds` clearly shorter than `periodSeconds` (the endpoint should answer \
from a cached snapshot in milliseconds, so the default 1 s is usually right).",
};

/// A large initialDelaySeconds on liveness instead of a startup probe.
pub const INITIAL_DELAY_INSTEAD_OF_STARTUP_PROBE: Rule = Rule {
    id: "initial-delay-instead-of-startup-probe",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a large liveness `initialDelaySeconds` stands in for a startup probe",
    why: "A fixed delay is a guess at the boot time: too short and a slow boot crash-loops (seed \
000: \"cold starts take 35s and the probe grace was 20s\"; seed 003: a 90 s model load against a \
liveness probe that gives up around 30 s), too long and a process that wedges right after every \
restart goes undetected for the whole delay (seed 004: \"a bad trade because it also delays \
detection of a genuinely wedged process\"). A `startupProbe` (GA in Kubernetes 1.20) gates \
liveness and readiness until the boot has finished, whatever it takes, up to its budget.",
    fix: "Remove the delay (or keep it short) and add a `startupProbe` on the liveness endpoint \
with `failureThreshold × periodSeconds` above the worst boot time, e.g. `periodSeconds: 5, \
failureThreshold: 30` for up to 150 s.",
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
probe's budget cover the boot.",
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
default is 3 × 10 = 30 s. Seed 003: a 14-billion-parameter model takes 90 s to load and \"every \
deploy crashloops until someone adds a startup probe\"; seed 004: a 40 s warm-up against liveness \
checking from 10 s. The boot time comes from the contract (`startup.expected_boot_ms`) or the \
`probity.dev/boot-seconds` annotation.",
    fix: "Add (or lengthen) a `startupProbe` so that `initialDelaySeconds + failureThreshold × \
periodSeconds` exceeds the worst boot time with a margin, e.g. `periodSeconds: 5, \
failureThreshold: 30` for 150 s.",
};

/// Liveness gives up no later than readiness.
pub const LIVENESS_WINDOW_SHORTER_THAN_READINESS: Rule = Rule {
    id: "liveness-window-shorter-than-readiness",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "liveness gives up no later than readiness: pods are killed before they are drained",
    why: "When a container degrades, readiness should take it out of rotation first and liveness \
restart it only if it stays broken. If `failureThreshold × periodSeconds` of liveness is not \
longer than readiness', the pod is restarted before (or while) it is drained, so in-flight and \
new requests fail during the kill, and a condition both probes see becomes a restart instead of a \
drain. Kubernetes' probe guide recommends the same cheap endpoint with a higher failure threshold \
for liveness; seeds 000 and 004 both end with liveness 10 s × 3 = 30 s against readiness 5 s × 2 \
= 10 s.",
    fix: "Give liveness a longer failure window than readiness, e.g. readiness `periodSeconds: 5, \
failureThreshold: 2` and liveness `periodSeconds: 10, failureThreshold: 3`.",
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
into an overload (seed 003: liveness is for \"a deadlocked event loop … an endless garbage \
collection pause\", not a momentary one). `failureThreshold: 1` kills on a single missed probe.",
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
the pod flaps. Seed 003: \"pods leave and rejoin every thirty seconds, connection pools reset, \
cache warmups rerun, latency spikes, retries cascade\" — hysteresis (fall fast, rise slow) is the \
fix. The kubelet counts consecutive identical results (`pkg/kubelet/prober/worker.go`), so the \
thresholds are the probe's hysteresis.",
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
periods, timeouts, thresholds and delays may not be negative; an init container that runs to \
completion may not have probes (\"may not be set for init containers without restartPolicy=Always\"; \
a sidecar may); and a value of the wrong type \
(`periodSeconds: \"10\"`) fails to decode. The apply fails, or, through tools that drop what they \
cannot decode, the probe silently differs from what was written.",
    fix: "Correct the value as the message says: `successThreshold: 1` on liveness and startup, \
no `terminationGracePeriodSeconds` on readiness, exactly one of `httpGet`, `tcpSocket`, `grpc` or \
`exec`, non-negative integers; probes only on sidecar init containers (`restartPolicy: Always`).",
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
Services and PodDisruptionBudgets against the Kubernetes API's field lists.",
    fix: "Correct the spelling (the message suggests the nearest known field) or remove the \
field.",
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
a broken pod stays in rotation (seed 003: \"a check that passes over one path can fail over the \
other\").",
    fix: "Remove `host`; to send a virtual-host name, set an `httpHeaders` entry `Host: …` \
instead.",
};

/// Probe port not declared by the container.
pub const PROBE_PORT_NOT_DECLARED: Rule = Rule {
    id: "probe-port-not-declared",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a probe's port is not one the container declares",
    why: "A named port the container does not declare cannot be resolved: the kubelet's \
`findPortByName` fails and the probe errors on every attempt (kube-linter's `liveness-port`, \
`readiness-port` and `startup-port` make the same check). A numeric port that is not among the \
container's `ports` is usually a stale number after the service moved, or a UDP port, which no \
probe can reach.",
    fix: "Probe a port the container declares (by name, so a renumbering follows), or declare the \
port in `ports` with `protocol: TCP`.",
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
    fix: "Write the port number in `grpc.port`.",
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
the `probity.dev/drain-delay-seconds` annotation.",
    fix: "Raise `terminationGracePeriodSeconds` above preStop sleep + drain delay + in-flight \
deadline, with a few seconds to spare, or shorten the sleep or the drain.",
};

/// No readiness probe on a pod behind a Service.
pub const MISSING_READINESS_PROBE: Rule = Rule {
    id: "missing-readiness-probe",
    severity: Severity::Warning,
    scope: Scope::Object,
    summary: "a pod behind a Service has no readiness probe",
    why: "Without a readiness probe a container is Ready as soon as it starts \
(`pod-lifecycle.md` \"Types of probe\": the default state is Success), so the Service's \
EndpointSlice sends it traffic before it can serve and keeps sending traffic while it cannot: \
seed 000's broken instance kept a third of the traffic for 26 minutes, seed 001's fleet served \
errors for 10. Only the Service's selection makes it matter, so the rule fires for workloads a \
Service in the same input selects.",
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
deleted and forgotten. A budget exists to keep some pods while others move (seed 004 adds \
`minAvailable: 50%` so \"not everything can be unavailable simultaneously\"). An autoscaled \
workload is judged at its HorizontalPodAutoscaler's `minReplicas`, where the budget bites \
hardest.",
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
nothing; seed 004 adds a budget precisely so \"not everything can be unavailable \
simultaneously\" during voluntary disruptions such as node drains.",
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
share a node), turning maintenance into an outage. Seed 004's fix adds `minAvailable: 50%`; it \
\"does not prevent liveness kills … and it does protect against voluntary disruptions like node \
drains\". Informational, because the budget may live in another repository.",
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
HorizontalPodAutoscaler's `maxReplicas` when one targets the workload). Seed 003: \"one probe \
every two seconds across fifty pods is twenty-five queries per second hitting your database\", \
and \"2000 pods with both probes at 2-second intervals is 2000 requests per second of healthcheck \
traffic\". Dependency load is counted per dependency: a probe on an endpoint that checks \
dependencies on each request (`probity.dev/dependency-endpoints`) reaches every one of them, and \
for a service with a contract each poller reaches its dependency once per interval per replica, \
whatever the probe period. Thresholds: `--max-probe-rps` (default 1000) and \
`--max-dependency-rps` (default 20, per dependency).",
    fix: "Lengthen `periodSeconds` (readiness every 5–10 s is plenty when the endpoint answers \
from a snapshot), serve probes from a cached snapshot filled by pollers so dependencies see one \
check per poll interval, and lengthen the pollers' intervals for large fleets.",
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
    severity: Severity::Warning,
    scope: Scope::Document,
    summary: "a document that is not a Kubernetes object, so nothing in it is judged",
    why: "Every Kubernetes object is a mapping with a string `apiVersion` and `kind` \
(`k8s.io/apimachinery` `TypeMeta`); without them `kubectl apply` refuses the document. Usually \
the file is not a manifest at all (a Helm `values.yaml`, a `Chart.yaml`, a CI file picked up by \
a folder walk), or the document lost its header in an edit. Either way the linter cannot judge \
it, and says so rather than passing it silently.",
    fix: "Lint rendered manifests (`helm template … | probity lint -`), leave files that are not \
manifests out of the paths given, or restore the document's `apiVersion` and `kind`.",
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
    fix: "Keep one occurrence of the key, with the value that should win; `probity lint --fix` \
removes the first one, which is the one that is ignored today.",
};

/// Every rule, in the order the reference lists them.
pub const ALL: &[&Rule] = &[
    &IDENTICAL_LIVENESS_READINESS,
    &LIVENESS_CHECKS_DEPENDENCIES,
    &TIMEOUT_NOT_BELOW_PERIOD,
    &INITIAL_DELAY_INSTEAD_OF_STARTUP_PROBE,
    &INITIAL_DELAY_WITH_STARTUP_PROBE,
    &STARTUP_BUDGET_BELOW_BOOT_TIME,
    &LIVENESS_WINDOW_SHORTER_THAN_READINESS,
    &LIVENESS_WINDOW_TOO_SHORT,
    &READINESS_FLAPPING,
    &REJECTED_BY_API_SERVER,
    &UNKNOWN_FIELD,
    &PROBE_HOST_NOT_POD,
    &PROBE_PORT_NOT_DECLARED,
    &GRPC_NAMED_PORT,
    &GRACE_PERIOD_BELOW_DRAIN,
    &MISSING_READINESS_PROBE,
    &PUBLISH_NOT_READY_ADDRESSES,
    &PDB_BLOCKS_EVERY_DRAIN,
    &PDB_PROTECTS_NOTHING,
    &PDB_MISSING,
    &PROBE_LOAD,
    &INVALID_ANNOTATION,
    &DUPLICATE_KEY,
    &INVALID_YAML,
    &NOT_A_KUBERNETES_OBJECT,
];
