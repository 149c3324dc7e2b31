#!/usr/bin/env bash
# The shell logic of the GitHub Action (action.yml), testable outside GitHub
# (tests/integration/action.rs runs every step here against the reference server).
#
#   action.sh install   cargo install mcpprobe from the action's source, or a released version
#   action.sh scan      run the scan into SARIF, JSON and Markdown; record the exit code; exit 0
#   action.sh summary   append the Markdown summary to $GITHUB_STEP_SUMMARY
#   action.sh finish    exit with the scan's saved exit code, saying why on a refusal
#
# Every input arrives through the environment (never interpolated into this script):
#   MCPPROBE_TARGET, MCPPROBE_FAIL_ON, MCPPROBE_MIN_CONFIDENCE, MCPPROBE_BASELINE,
#   MCPPROBE_CONFIG, MCPPROBE_TOKEN (read by mcpprobe itself), MCPPROBE_ARGS, MCPPROBE_VERSION,
#   MCPPROBE_OUT_DIR (where the files go), MCPPROBE_BIN (a binary to use instead of installing).
# GitHub's own: GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, GITHUB_PATH, GITHUB_WORKFLOW_REF.
set -euo pipefail

out_dir=${MCPPROBE_OUT_DIR:-${RUNNER_TEMP:-/tmp}/mcpprobe}
bin=${MCPPROBE_BIN:-mcpprobe}

say() { printf 'mcpprobe-action: %s\n' "$*" >&2; }
# An error annotation on GitHub, a plain line elsewhere. Newlines and % are escaped as the
# workflow-command syntax requires.
annotate() {
  local level=$1 msg=$2
  if [ -n "${GITHUB_ACTIONS:-}" ]; then
    msg=${msg//'%'/'%25'}
    msg=${msg//$'\r'/'%0D'}
    msg=${msg//$'\n'/'%0A'}
    printf '::%s title=mcpprobe::%s\n' "$level" "$msg"
  else
    printf 'mcpprobe-action: %s: %s\n' "$level" "$msg" >&2
  fi
}
output() { # name value
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    printf '%s=%s\n' "$1" "$2" >>"$GITHUB_OUTPUT"
  fi
}

install() {
  if [ -n "${MCPPROBE_BIN:-}" ]; then
    say "using $MCPPROBE_BIN"
    return
  fi
  local root=${RUNNER_TEMP:-/tmp}/mcpprobe-bin
  if [ -n "${MCPPROBE_VERSION:-}" ]; then
    local repo=${MCPPROBE_ACTION_REPOSITORY:-}
    [ -n "$repo" ] || { annotate error "no action repository to install version $MCPPROBE_VERSION from"; exit 64; }
    cargo install --locked --root "$root" --git "https://github.com/$repo" --tag "v$MCPPROBE_VERSION" mcpprobe
  else
    cargo install --locked --root "$root" --path "${MCPPROBE_ACTION_PATH:?the action path}"
  fi
  if [ -n "${GITHUB_PATH:-}" ]; then
    printf '%s\n' "$root/bin" >>"$GITHUB_PATH"
  fi
  "$root/bin/mcpprobe" --version
}

# The file code scanning places the results on: the config or the baseline (mcpprobe picks
# those itself), else the workflow file that ran the scan.
workflow_file() {
  local ref=${GITHUB_WORKFLOW_REF:-}
  [ -n "$ref" ] || return 0
  ref=${ref%@*}             # owner/repo/.github/workflows/x.yml
  printf '%s\n' "${ref#*/*/}"
}

scan() {
  local target=${MCPPROBE_TARGET:?the target input is required}
  mkdir -p "$out_dir"
  local sarif=$out_dir/mcpprobe.sarif json=$out_dir/mcpprobe.json md=$out_dir/summary.md
  rm -f "$sarif" "$json" "$md" "$out_dir/exit-code"
  local args=(scan) cmd=()
  # A URL by its scheme (in any case); anything else is a stdio command line.
  case ${target,,} in
    http://* | https://*) args+=("$target") ;;
    # The MCP servers the repository's client files name (.mcp.json, .vscode/mcp.json,
    # .cursor/mcp.json, …): the workflow's repository is its owner's, so they are trusted.
    discover) args+=(--discover --trust-project) ;;
    *)
      # A stdio command line, split on whitespace with globbing off (no shell quoting: a
      # program or argument with spaces needs a wrapper script).
      set -f
      read -r -a cmd <<<"$target"
      set +f
      args+=(--stdio)
      ;;
  esac
  args+=(--format terminal --json "$json" --sarif "$sarif" --markdown "$md")
  [ -n "${MCPPROBE_FAIL_ON:-}" ] && args+=(--fail-on "$MCPPROBE_FAIL_ON")
  [ -n "${MCPPROBE_MIN_CONFIDENCE:-}" ] && args+=(--min-confidence "$MCPPROBE_MIN_CONFIDENCE")
  [ -n "${MCPPROBE_BASELINE:-}" ] && args+=(--baseline "$MCPPROBE_BASELINE")
  [ -n "${MCPPROBE_CONFIG:-}" ] && args+=(--config "$MCPPROBE_CONFIG")
  if [ -z "${MCPPROBE_CONFIG:-}${MCPPROBE_BASELINE:-}" ] && [ ! -f mcpprobe.toml ]; then
    local wf
    wf=$(workflow_file)
    [ -n "$wf" ] && args+=(--sarif-artifact "$wf")
  fi
  if [ -n "${MCPPROBE_ARGS:-}" ]; then
    local extra=()
    set -f
    read -r -a extra <<<"$MCPPROBE_ARGS"
    set +f
    args+=("${extra[@]}")
  fi
  [ "${#cmd[@]}" -gt 0 ] && args+=(-- "${cmd[@]}")
  local code=0
  "$bin" "${args[@]}" || code=$?
  printf '%s\n' "$code" >"$out_dir/exit-code"
  output exit-code "$code"
  if [ -f "$sarif" ]; then output sarif-file "$sarif"; else output sarif-file ""; fi
  if [ -f "$json" ]; then
    output json-file "$json"
    output findings "$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(sum(1 for f in r["findings"] if not f.get("suppressed") and f.get("new") is not False))' "$json")"
  else
    output json-file ""
    output findings ""
  fi
  say "mcpprobe exited $code (the job fails, if it must, after the upload and the summary)"
}

summary() {
  local md=$out_dir/summary.md dest=${GITHUB_STEP_SUMMARY:-/dev/stdout}
  if [ -f "$md" ]; then
    cat "$md" >>"$dest"
  else
    local code
    code=$(cat "$out_dir/exit-code" 2>/dev/null || echo "unknown")
    printf '### mcpprobe\n\nNo report was written (exit code %s): see the Scan step log.\n' "$code" >>"$dest"
  fi
}

finish() {
  local code
  code=$(cat "$out_dir/exit-code" 2>/dev/null || echo 64)
  local reason="" refusal=""
  if [ -f "$out_dir/mcpprobe.json" ]; then
    reason=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("reason") or "")' "$out_dir/mcpprobe.json" 2>/dev/null || true)
    refusal=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("refusal") or "")' "$out_dir/mcpprobe.json" 2>/dev/null || true)
  fi
  case $code in
    0) say "clean: nothing at or above the fail-on severity" ;;
    1) annotate error "findings at or above the fail-on severity: see the job summary and the code-scanning tab" ;;
    2)
      if [ "$refusal" = opted_out ]; then
        annotate error "the target opted out of scanning, so mcpprobe sent nothing: $reason. Respect it, or, if you own the server, remove the opt-out."
      elif [ "$refusal" = private_address ]; then
        annotate error "stopped by the gate: $reason. If that address is meant (a server inside this runner's network), add --allow-private-addresses to the action's args."
      else
        annotate error "stopped by the gate: $reason. To prove you own the host: run \`mcpprobe verify init HOST\`, publish the DNS TXT record it prints at _mcpprobe.HOST, run \`mcpprobe verify check HOST\` with MCPPROBE_STATE_DIR set to a folder in the repository (say .mcpprobe), commit that folder, and set the same MCPPROBE_STATE_DIR in this step's env. Each scan re-checks that the record is still published."
      fi
      ;;
    3) annotate error "the scan is incomplete: ${reason:-see the Scan step log}" ;;
    64) annotate error "usage or configuration error: see the Scan step log" ;;
    *) annotate error "mcpprobe exited $code" ;;
  esac
  exit "$code"
}

case ${1:-} in
  install) install ;;
  scan) scan ;;
  summary) summary ;;
  finish) finish ;;
  *) say "usage: action.sh install|scan|summary|finish"; exit 64 ;;
esac
