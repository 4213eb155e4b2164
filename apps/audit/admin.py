"""The audit trail in the admin: django-auditlog's view, filterable by where a change came from."""

from __future__ import annotations

from auditlog.admin import LogEntryAdmin
from auditlog.models import LogEntry
from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

SOURCES = (
    ("admin", "Admin"),
    ("pages", "Pages"),
    ("api", "REST API"),
    ("command", "Management command"),
)


class SourceFilter(admin.SimpleListFilter):
    title = "source"
    parameter_name = "source"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin):
        return (*SOURCES, ("system", "The hub itself"))

    def queryset(self, request: HttpRequest, queryset: QuerySet[LogEntry]) -> QuerySet[LogEntry]:
        if self.value() == "system":
            return queryset.filter(additional_data__isnull=True)
        if self.value():
            return queryset.filter(additional_data__source=self.value())
        return queryset


class AuditEntryAdmin(LogEntryAdmin):
    list_filter = [SourceFilter, *LogEntryAdmin.list_filter, "timestamp"]
    list_display = [*LogEntryAdmin.list_display, "source", "remote_addr"]

    @admin.display(description="source")
    def source(self, entry: LogEntry) -> str:
        return (entry.additional_data or {}).get("source", "hub")


if admin.site.is_registered(LogEntry):
    admin.site.unregister(LogEntry)
admin.site.register(LogEntry, AuditEntryAdmin)
