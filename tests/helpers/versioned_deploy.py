"""A deployment's workflow module (``SUPERSTEP_WORKFLOWS=versioned_deploy``) whose ``spend``
versions come from ``SPEND_VERSIONS`` (``v1``, ``v1,v3``...): the browser test restarts the
server with another value, as a deploy of new code would. Not a test module."""

from __future__ import annotations

import os

from versioned_flows import spend_v1, spend_v2_compatible, spend_v3_incompatible

_BUILDERS = {"v1": spend_v1, "v2": spend_v2_compatible, "v3": spend_v3_incompatible}

WORKFLOWS = {
    "spend": [_BUILDERS[name] for name in os.environ.get("SPEND_VERSIONS", "v1").split(",")],
}
