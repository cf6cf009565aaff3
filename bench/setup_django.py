"""Django for a benchmark script: always the embedded servers, under a data folder of its own."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_django(data_dir_name: str) -> Path:
    """Configure and set up Django on var/<data_dir_name> (or MEMORYAPP_DATA_DIR); returns the project root.

    A configured DATABASE_URL or REDIS_URL is dropped: such a server may hold real data. For the same
    reason var/ itself, the development data, is refused."""
    sys.path.insert(0, str(ROOT))
    os.environ["DJANGO_SETTINGS_MODULE"] = "memoryapp.settings"
    os.environ.setdefault("MEMORYAPP_DATA_DIR", str(ROOT / "var" / data_dir_name))
    os.environ.pop("DATABASE_URL", None)
    os.environ.pop("REDIS_URL", None)
    if Path(os.environ["MEMORYAPP_DATA_DIR"]).resolve() == (ROOT / "var").resolve():
        sys.exit("refusing to benchmark in var/ (the development data); set MEMORYAPP_DATA_DIR elsewhere")

    import django

    django.setup()
    return ROOT
