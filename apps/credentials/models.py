from apps.credentials.upstream_models import UpstreamOAuthClient, UpstreamOAuthGrant  # noqa: F401 - registers them
