#!/usr/bin/env bash
# Validates everything under deploy/:
#   - the Kubernetes manifests against the Kubernetes schemas, strict (unknown fields fail);
#   - the alert rules with `promtool check rules` and their unit tests with `promtool test rules`;
#   - the HAProxy configuration with `haproxy -c`;
#   - the manifests with probity's own linter, which must find nothing.
# Needs what scripts/setup.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${PROBITY_VENV:-$PWD/target/venv}"
export PATH="$VENV/bin:$PATH"
work=target/deploy-check
rm -rf "$work" && mkdir -p "$work"

for version in 1.30.0 1.37.0; do
  kubernetes-validate --strict --quiet -k "$version" deploy/kubernetes/*.yaml
done

# promtool reads plain rule files: take the PrometheusRule's spec.
python3 - deploy/kubernetes/prometheusrule.yaml "$work/rules.yml" <<'PY'
import sys, yaml
with open(sys.argv[1]) as source:
    documents = [d for d in yaml.safe_load_all(source) if d]
rules = [d for d in documents if d.get("kind") == "PrometheusRule"]
if len(rules) != 1:
    sys.exit(f"{sys.argv[1]}: expected one PrometheusRule, found {len(rules)}")
with open(sys.argv[2], "w") as target:
    yaml.safe_dump(rules[0]["spec"], target, sort_keys=False)
PY
cp deploy/prometheus/alerts.test.yml "$work/"
promtool check rules "$work/rules.yml"
promtool test rules "$work/alerts.test.yml"

haproxy -c -q -f deploy/haproxy/haproxy.cfg

# Lint against what checkout really checks: its contract, with the deployment's own args (the
# readiness probe it declares, from which it derives its drain delay).
mapfile -t args < <(python3 - deploy/kubernetes/deployment.yaml <<'PY'
import sys, yaml
for document in yaml.safe_load_all(open(sys.argv[1])):
    if document and document.get("kind") == "Deployment":
        container = document["spec"]["template"]["spec"]["containers"][0]
        for arg in container.get("args", []):
            if not arg.startswith(("--listen", "--admin-listen", "--database-url")):
                print(arg)
PY
)
cargo run --quiet --locked -p checkout -- --print-contract "${args[@]}" >"$work/contract.json"
cargo run --quiet --locked -p probity-cli -- lint --contract "$work/contract.json" deploy/kubernetes
echo "deploy files valid"
