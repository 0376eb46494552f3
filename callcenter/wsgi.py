"""WSGI entry point for Switchboard."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "callcenter.settings")
application = get_wsgi_application()
