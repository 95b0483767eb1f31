# Sourced by scripts/setup.sh: installs the open-source services the agent's and the drill's
# third-party tests run (crates/probity-agent/tests/third_party.rs,
# crates/probity-drill/tests/third_party.rs), once per machine, at pinned versions, from the
# npm registry and PyPI. Nothing of theirs is in this repository: only what to install.
#
#   Parse Server 9.10.0 (Node, pg-promise pool)     $PROBITY_SUBJECTS/parse-server-9.10.0
#   MLflow tracking server 3.17.2 (Python, SQLAlchemy pool, waitress threads)
#                                                   $PROBITY_SUBJECTS/mlflow-3.17.2
#
# Each install is a directory with a `.installed` stamp written last: a directory without it
# (an interrupted install) is removed and installed again. The tests read PROBITY_SUBJECTS
# (default /opt/probity-subjects) and, under CI=true, fail when an install is missing.

PROBITY_SUBJECTS="${PROBITY_SUBJECTS:-/opt/probity-subjects}"
export PROBITY_SUBJECTS

subjects_recipes="$PWD/scripts/subjects"

install_parse_server() {
  local dir="$PROBITY_SUBJECTS/parse-server-9.10.0"
  [ -f "$dir/.installed" ] && return 0
  if ! command -v npm >/dev/null; then
    log "npm not found: Parse Server needs Node 20.19+ and npm"
    return 1
  fi
  log "installing Parse Server 9.10.0 under $dir"
  rm -rf "$dir" && mkdir -p "$dir"
  cp "$subjects_recipes/parse-server/package.json" "$subjects_recipes/parse-server/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --omit=dev --no-audit --no-fund --silent) && touch "$dir/.installed"
}

install_mlflow() {
  local dir="$PROBITY_SUBJECTS/mlflow-3.17.2"
  [ -f "$dir/.installed" ] && return 0
  log "installing MLflow 3.17.2 under $dir"
  rm -rf "$dir"
  python3 -m venv "$dir" &&
    "$dir/bin/pip" install -q -r "$subjects_recipes/mlflow/requirements.txt" &&
    touch "$dir/.installed"
}

mkdir -p "$PROBITY_SUBJECTS"
subjects_failed=()
install_parse_server || subjects_failed+=("Parse Server")
install_mlflow || subjects_failed+=(MLflow)
if ((${#subjects_failed[@]})); then
  if [ "${CI:-}" = "true" ]; then
    log "could not install: ${subjects_failed[*]}"
    exit 1
  fi
  log "warning: could not install ${subjects_failed[*]} (their tests will skip outside CI)"
fi
