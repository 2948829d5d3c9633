"""The settings of the browser tests' servers: the dashboard's own, with the fast password
hasher the rest of the suite uses too (``dashboard.config.settings_test``), no sign-in rate limits
and this machine admitted as a webhook target.

Every browser test signs in through the login form, most of them more than once, and the
default hasher's iterations cost a second of CPU per sign-in on a busy machine, with nothing
for a test to learn from them.
"""

from __future__ import annotations

from dashboard.config.settings import *  # the dashboard's settings, as they are

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Every browser signs in from 127.0.0.1, as a dozen users a minute: the sign-in rate limits
# (dashboard/access/rate_limits.py, tested on their own) would answer 429 to the suite itself.
SUPERSTEP_RATE_SIGNIN_ADDRESS = SUPERSTEP_RATE_SIGNIN_ACCOUNT = "off"
SUPERSTEP_RATE_API_TOKEN = SUPERSTEP_RATE_API_USER = "off"
# The alert tests' webhook receivers listen on this machine: admitted on purpose, as an operator
# admits an internal host (dashboard/outbound.py).
SUPERSTEP_OUTBOUND_ALLOW = ["127.0.0.0/8", "::1", "localhost"]
