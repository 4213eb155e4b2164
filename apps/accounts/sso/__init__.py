"""Single sign-on with OpenID Connect providers (README "Single sign-on").

django-allauth runs the protocol: discovery, authorization code with PKCE, `state`, the token
exchange. The hub adds what allauth leaves out — a `nonce` in every request and an ID token whose
signature is always checked (allauth skips it when the token came straight from the token
endpoint) — and decides who the person is and what they belong to (accounts.py).

    config.py    the providers (settings and the admin) and the group mapping
    oidc.py      allauth's OpenID Connect provider and adapter, tightened
    adapter.py   allauth's hook: which providers exist, and the hub's decision at each sign-in
    accounts.py  writes: find, link or create the account; groups → teams, staff, superuser
    views.py     the sign-in, callback and back-channel logout URLs
"""
