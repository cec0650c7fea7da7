"""kbc's switches (KBC_* environment variables) for one program.

kbc reads its switches (KBC_IDX32, KBC_NO_FUSE, KBC_FP32_MMA, ...: the
table in docs/ARCHITECTURE.md) when a program's executor is made, at its
first run, through getenv in libkbc; os.environ's changes reach it (Python
calls putenv). `environment(changes)` sets them around a program's build
and first run and restores the previous values after.
"""

from __future__ import annotations

import contextlib
import os


@contextlib.contextmanager
def environment(changes: dict[str, str]):
    saved = {k: os.environ.get(k) for k in changes}
    os.environ.update(changes)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
