from django.apps import AppConfig


class GatewayConfig(AppConfig):
    name = "apps.gateway"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from apps.catalog.models import HUB_SERVER
        from apps.gateway import hub_tools
        from apps.toolsets.calls import register_builtin

        # The hub's own tools answer calls to the built-in server `hub`, wherever they come from.
        register_builtin(HUB_SERVER, hub_tools.answer)

        from apps.credentials.signals import credentials_changed
        from apps.gateway import elicitations

        # Sessions sent to a page by URL elicitation hear when the user has finished there.
        credentials_changed.connect(
            elicitations.credentials_changed, dispatch_uid="gateway.elicitations"
        )
