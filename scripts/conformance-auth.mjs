// Preload for the MCP conformance CLI: adds `Authorization: Bearer $MCP_CONFORMANCE_TOKEN` to every
// request made through globalThis.fetch (the suite has no header option of its own).
//
//   MCP_CONFORMANCE_TOKEN=T node --import ./scripts/conformance-auth.mjs \
//       node_modules/@modelcontextprotocol/conformance/dist/index.js server --url URL
//
// Covered: every scenario that talks through the TypeScript SDK client (its transport calls the
// global fetch at request time) and the raw fetch() calls of server-sse-polling and
// server-sse-multiple-streams. NOT covered: dns-rebinding-protection, which sends its two
// initialize requests with undici's request() and so bypasses fetch. Run that one against a URL
// that carries its own token (the hub's `/mcp/t/<token>/` form) instead.
const token = process.env.MCP_CONFORMANCE_TOKEN;

if (token) {
  const originalFetch = globalThis.fetch;
  globalThis.fetch = function fetchWithBearer(input, init = {}) {
    const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
    if (!headers.has('authorization')) {
      headers.set('authorization', `Bearer ${token}`);
    }
    return originalFetch.call(this, input, { ...init, headers });
  };
}
