"""The settings of the browser tests' servers: the dashboard's own, with the fast password
hasher the rest of the suite uses too (``dashboard.config.settings_test``).

Every browser test signs in through the login form, most of them more than once, and the
default hasher's iterations cost a second of CPU per sign-in on a busy machine, with nothing
for a test to learn from them.
"""

from __future__ import annotations

from dashboard.config.settings import *  # the dashboard's settings, as they are

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
