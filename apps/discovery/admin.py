from django.contrib import admin

from apps.discovery.models import ActivationPattern


@admin.register(ActivationPattern)
class ActivationPatternAdmin(admin.ModelAdmin):
    list_display = ("endpoint", "pattern", "priority", "created_at", "problem")
    search_fields = ("pattern", "endpoint__slug")
    list_select_related = ("endpoint",)

    # Through the services, so web processes hear of the change at once.
    def save_model(self, request, obj, form, change) -> None:
        from apps.discovery.services import update_pattern

        update_pattern(row=obj)

    def delete_model(self, request, obj) -> None:
        from apps.discovery.services import delete_pattern

        delete_pattern(pattern=obj)
