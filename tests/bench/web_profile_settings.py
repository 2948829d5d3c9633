"""The production settings with ``web_profile.Profiled`` first: ``load_bench.py --profile``."""

from dashboard.config.settings import *
from dashboard.config.settings import MIDDLEWARE

MIDDLEWARE = ["web_profile.Profiled", *MIDDLEWARE]
