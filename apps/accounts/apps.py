from django.apps import AppConfig
from django.core import checks


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.accounts import token_cache
        from apps.accounts.models import AccessToken, Membership, SsoProvider, Team
        from apps.accounts.sso import config, session
        from apps.audit.registry import register

        token_cache.connect()
        session.connect()  # SSO sessions remember what their check needs
        checks.register(config.check_settings)
        # The digest is not the token, but it has no business in a trail anyone with access reads.
        register(AccessToken, ignore_fields=["digest", "last_used_at"])
        register(Team)
        register(Membership)
        register(SsoProvider, secret_fields=["client_secret"])
