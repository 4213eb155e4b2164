from django.urls import path

from apps.chat.asks import AsksConsumer
from apps.chat.consumers import ChatConsumer
from apps.chat.runs.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/chat/<str:conversation_id>/", ChatConsumer.as_asgi()),
    path("ws/runs/<str:run_id>/", RunConsumer.as_asgi()),
    path("ws/asks/", AsksConsumer.as_asgi()),
]
