from django.contrib import admin, messages

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    """Tokens are created with `manage.py create_api_token` (the only time the raw token
    is shown); here they are listed and revoked. The hash is never displayed."""

    list_display = ("name", "user", "prefix", "created", "last_used_at", "revoked")
    list_filter = ("revoked",)
    search_fields = ("name", "prefix", "user__username")
    fields = ("name", "user", "prefix", "created", "last_used_at", "revoked")
    # Revoking is final (a revoked token may have leaked): only the action sets it.
    readonly_fields = ("user", "prefix", "created", "last_used_at", "revoked")
    actions = ("revoke",)

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected tokens")
    def revoke(self, request, queryset):
        count = queryset.filter(revoked=False).update(revoked=True)
        self.message_user(request, f"Revoked {count} token(s).", messages.SUCCESS)
