from django.contrib import admin

from apps.chat.models import Conversation, Message


class MessageInline(admin.TabularInline):
    model = Message
    extra = 0
    fields = (
        "role",
        "text",
        "tool_name",
        "is_error",
        "input_tokens",
        "output_tokens",
        "duration_ms",
        "created_at",
    )
    readonly_fields = fields
    can_delete = False


@admin.register(Conversation)
class ConversationAdmin(admin.ModelAdmin):
    """Read-only: conversations are written by their owners' chats."""

    list_display = ("__str__", "owner", "provider", "model", "endpoint", "updated_at")
    search_fields = ("title", "owner__username")
    list_select_related = ("owner", "provider", "endpoint")
    readonly_fields = ("owner", "provider", "model", "endpoint", "created_at", "updated_at")
    inlines = [MessageInline]
