from django.apps import AppConfig


class WebConfig(AppConfig):
    """The hub's pages for people: dashboard, tools, presets, endpoint, servers."""

    name = "apps.web"
    label = "web"
