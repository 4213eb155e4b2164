"""The MCP protocol face of every endpoint: Streamable HTTP, legacy SSE, stateless 2026-07-28.

Why it is not the SDK's server (`MCPServer` / `StreamableHTTPSessionManager`): the SDK keeps a
session in the memory of the process that opened it (its streams, its pending server→client
requests, its task group), so every request of a session must reach that one process. Here a
session is a record in Redis (`state.py`: negotiated version, client capabilities, log level,
subscriptions, loaded tools) and no web process holds anything between requests, so any web
node behind a plain load balancer serves any request of any session. For the same reason a
dropped stream resumes on another process (`resume.py`: every SSE event is stored with an id
and replayed from `Last-Event-ID`; a POST's stream outlives its connection), and a client's
answer to a sampling or elicitation request may arrive at any process and is forwarded to the
one that asked (`mailbox.py`). And one endpoint is not one server: it aggregates the enabled
tools, resources and prompts of many backends, renamed per endpoint, routing each call through
the connection pool to the backend that owns it (`protocol.py`), with the hub's own tools
beside them. The SDK's server would have to be wrapped around all three; the gateway speaks
the protocol itself, and uses the SDK for its types and inbound-request checks.
"""
