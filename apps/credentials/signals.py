"""`credentials_changed`: a user's values for a server changed (saved or removed).

Receivers only flush caches and notify: toolsets bumps that user's endpoints, so their cached views
rebuild with the new spec (and the user's connection is replaced, nobody else's).
"""

from django.dispatch import Signal

credentials_changed = Signal()  # kwargs: user_id: int, server_id: int
