"""The secret forms of issue 32 step 7, shared by these tests and `tests/hostile`.

Built from parts so that no secret scanner mistakes the test data for a real credential.
"""

from __future__ import annotations

import base64

GHP = "ghp_" + "Zq7ownPw81xAbCd1234EfGh" + "Jk5LmNoPqRsTu"
PW = "copper-" + "harbor-47"
B64_USER_PW = base64.b64encode(f"svc-runner:{PW}".encode()).decode()
B64_GHP = base64.b64encode(GHP.encode()).decode()
HEX_GHP = GHP.encode().hex()
SENTRY_KEY = "fbceebfaffbbfeaf" + "fdbebbececfefcae"
