#!/usr/bin/env bash
# Run the conformance suite directly against tests/servers/conformance_fixture.py (no hub):
# starts the fixture over Streamable HTTP on a free localhost port, runs scripts/conformance.sh
# against http://localhost:PORT/mcp, stops the fixture. This is the baseline the hub is held to.
#
#   scripts/conformance_direct.sh            # plain run: every scenario passes
#   scripts/conformance_direct.sh --token    # the fixture demands a bearer token and the suite
#                                            # sends it through the fetch preload (proves the
#                                            # preload; dns-rebinding-protection fails: raw undici)
#
# Environment: PYTHON (default .venv/bin/python), plus SUITE / SCENARIO / OUT / NODE as for
# scripts/conformance.sh.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
token=""
case "${1:-}" in
  "") ;;
  --token) token="conformance-$RANDOM$RANDOM" ;;
  *) sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac

port="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
fixture_log="$(mktemp "${TMPDIR:-/tmp}/conformance-fixture.XXXXXX.log")"
CONFORMANCE_FIXTURE_TOKEN="$token" "$PYTHON" "$ROOT/tests/servers/conformance_fixture.py" --http "$port" \
  >"$fixture_log" 2>&1 &
fixture_pid=$!
trap 'kill "$fixture_pid" 2>/dev/null; wait "$fixture_pid" 2>/dev/null || true' EXIT

for _ in $(seq 1 100); do  # up to ~10 s for the import and bind
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
  if ! kill -0 "$fixture_pid" 2>/dev/null; then
    echo "conformance_direct: fixture exited early:" >&2; cat "$fixture_log" >&2; exit 1
  fi
  sleep 0.1
done

echo "fixture pid $fixture_pid on http://localhost:$port/mcp${token:+ (bearer token required)}"
status=0
"$ROOT/scripts/conformance.sh" "http://localhost:$port/mcp" ${token:+"$token"} || status=$?
if [[ $status -ne 0 ]]; then echo "fixture log: $fixture_log"; else rm -f "$fixture_log"; fi
exit "$status"
