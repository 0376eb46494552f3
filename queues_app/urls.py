from django.urls import path

from .views import system

urlpatterns = [
    path("", system.home, name="home"),
    path("system/", system.system, name="system"),
    path("system/htmx-check/", system.htmx_check, name="system-htmx-check"),
]
