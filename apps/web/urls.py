from django.urls import path

from apps.web import chat_views, import_views, preset_views, server_views, tool_views, usage_views, views

app_name = "web"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", views.LogoutView.as_view(), name="logout"),
    path("servers/import/", import_views.import_page, name="import_servers"),
    path("servers/export/", import_views.export_file, name="export_servers"),
    path("servers/<str:name>/test/", server_views.test_server, name="test_server"),
    path("servers/<str:name>/discover/", server_views.discover_server, name="discover_server"),
    path("servers/<str:name>/live/", server_views.server_live, name="server_live"),
    path("tools/", tool_views.tools_page, name="tools"),
    path("tools/<int:tool_id>/", tool_views.tool_detail, name="tool_detail"),
    path("endpoint/", views.default_endpoint, name="default_endpoint"),
    path("endpoint/new/", views.new_endpoint, name="new_endpoint"),
    path("endpoints/<slug:slug>/", views.endpoint_page, name="endpoint"),
    path("endpoints/<slug:slug>/settings/", views.endpoint_settings, name="endpoint_settings"),
    path("endpoints/<slug:slug>/delete/", views.delete_endpoint, name="delete_endpoint"),
    path("endpoints/<slug:slug>/tokens/<int:token_id>/revoke/", views.revoke_token, name="revoke_token"),
    path("endpoints/<slug:slug>/tools/", tool_views.tool_list, name="tool_list"),
    path("endpoints/<slug:slug>/tools/<int:tool_id>/toggle/", tool_views.toggle_tool, name="toggle_tool"),
    path("endpoints/<slug:slug>/servers/<str:server>/", tool_views.tool_group, name="tool_group"),
    path("endpoints/<slug:slug>/servers/<str:server>/toggle/", tool_views.toggle_server, name="toggle_server"),
    path("presets/", preset_views.presets_page, name="presets"),
    path("presets/save/", preset_views.save_preset, name="save_preset"),
    path("presets/<int:preset_id>/", preset_views.preset_detail, name="preset"),
    path("presets/<int:preset_id>/share/", preset_views.share_preset, name="share_preset"),
    path("presets/<int:preset_id>/unshare/", preset_views.unshare_preset, name="unshare_preset"),
    path("presets/<int:preset_id>/load/", preset_views.load_preset, name="load_preset"),
    path("presets/<int:preset_id>/rollback/", preset_views.rollback_preset, name="rollback_preset"),
    path("presets/<int:preset_id>/delete/", preset_views.delete_preset, name="delete_preset"),
    path("servers/", views.servers_page, name="servers"),
    path("usage/", usage_views.usage_page, name="usage"),
    path("chat/", chat_views.chat_page, name="chat"),
    path("chat/new/", chat_views.new_conversation, name="new_conversation"),
    path("chat/<uuid:conversation_id>/", chat_views.chat_page, name="conversation"),
    path("chat/<uuid:conversation_id>/settings/", chat_views.conversation_settings, name="conversation_settings"),
    path("chat/<uuid:conversation_id>/delete/", chat_views.delete_conversation, name="delete_conversation"),
]
