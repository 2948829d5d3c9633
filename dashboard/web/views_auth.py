"""Sign in and out with Django's own views (templates/registration/login.html).

The login page does not bounce signed-in users away: a user whose role may not open a page is
sent here with ``next`` and must see why, not loop between the two pages.
"""

from __future__ import annotations

from django.contrib.auth import views as auth_views

login = auth_views.LoginView.as_view()
logout = auth_views.LogoutView.as_view()
