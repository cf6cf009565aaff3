"""Test settings: the same settings, with embedded servers in their own folder so a running
`make run` (its worker in particular) never sees test data or test tasks."""

import os
from pathlib import Path

_base = Path(os.environ.get("MEMORYAPP_DATA_DIR", Path(__file__).resolve().parent.parent / "var"))
os.environ["MEMORYAPP_DATA_DIR"] = str(_base / "test")

from memoryapp.settings import *  # noqa: E402,F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests only
