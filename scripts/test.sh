#!/usr/bin/env bash
# The one test command: setup, formatting, lints, every test, docs, and the deploy files.
#
#   scripts/test.sh
#
# CI runs it through .ci/run with CI=true, where a missing service fails the run instead of
# skipping the tests that need it.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

log "setup: packages and services"
source scripts/setup.sh

log "cargo fmt --check"
cargo fmt --all --check

log "cargo clippy (all targets, all features, -D warnings)"
cargo clippy --workspace --all-targets --all-features --locked -- -D warnings

log "tests"
if command -v cargo-nextest >/dev/null 2>&1; then
  cargo nextest run --workspace --all-features --locked --no-fail-fast
  cargo test --workspace --all-features --locked --doc
else
  cargo test --workspace --all-features --locked --no-fail-fast
fi

log "examples that run to completion"
# The others serve until Ctrl-C; every example is built by the tests above.
cargo run --locked --all-features -q -p probity-grpc --example grpc_health
cargo run --locked --all-features -q -p probity-agent --example sidecar

log "cargo doc (-D warnings)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --all-features --no-deps --locked
# The libraries with features also document cleanly with none of them (what a user who enables
# one backend reads: no link points at an item a feature hides).
RUSTDOCFLAGS="-D warnings" cargo doc -p probity -p probity-checks --no-default-features --no-deps --locked
# And with each backend alone: a link to an item behind another feature must not dangle.
backends=$(cargo metadata --format-version 1 --no-deps --locked | python3 -c 'import json, sys
for p in json.load(sys.stdin)["packages"]:
    if p["name"] == "probity-checks":
        print(" ".join(f for f in p["features"] if f not in ("default", "all") and not f.startswith("_")))')
[ -n "$backends" ] || { echo "no probity-checks features found" >&2; exit 1; }
for feature in $backends; do
  RUSTDOCFLAGS="-D warnings" cargo doc -q -p probity-checks --no-default-features --features "$feature" --no-deps --locked
done

log "cargo package (every published crate, in dependency order)"
# One invocation packages the crates in dependency order against the ones packaged before it (a
# local registry overlay: nothing is published, none needs to be on crates.io yet). The libraries
# a user adds are verified (built from their .crate files); the tools under the `probity`
# command are packaged without the rebuild, which would cost CI a second full build. The demo
# service is not published. `--allow-dirty`: the tree as it stands is what is checked.
cargo package --locked --allow-dirty \
  -p probity-contract -p probity -p probity-axum -p probity-checks -p probity-grpc
cargo package --locked --allow-dirty --no-verify --workspace --exclude checkout

if [ -x scripts/check-deploy.sh ]; then
  log "deploy files"
  scripts/check-deploy.sh
fi

log "all checks passed"
