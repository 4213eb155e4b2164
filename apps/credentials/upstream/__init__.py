"""Upstream OAuth: the hub as an OAuth client of the backends that require it, one token per user.

`oauth` holds the protocol steps (no models); `models` the hub's registrations (dynamic, or apps
an administrator registered by hand) and users' grants
(tables of the `credentials` app); `services` the writes (connect, refresh, disconnect);
`selectors` the reads; `calls` the retry of a call the backend refused with a stale token;
`api` and `admin` the REST view and the admin pages.
"""
