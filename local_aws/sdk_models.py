"""One copy of the AWS SDK's service models for every function instance in this process.

On Lambda each execution environment loads botocore's JSON models once, at its cold start. The
local runtime hosts every instance of every function in one process, and each instance builds its
own boto3 session (sessions are not thread-safe), so each would parse the same files again: a
profile of the runtime at 15 webhooks a second spent three quarters of its time there, in cold
starts that pushed warm invocations past their timeouts and so caused more cold starts. The models
are read-only data; sharing the loader that caches them changes nothing a handler can observe.
"""

from __future__ import annotations

import threading
from typing import Any

_LOCK = threading.Lock()
_LOADERS: dict[Any, Any] = {}
_PATCHED = False


def share() -> None:
    global _PATCHED
    if _PATCHED:
        return
    import botocore.session

    original = botocore.session.create_loader

    def shared_loader(search_path_string: Any = None) -> Any:
        with _LOCK:
            loader = _LOADERS.get(search_path_string)
            if loader is None:
                loader = _LOADERS[search_path_string] = original(search_path_string)
            return loader

    botocore.session.create_loader = shared_loader
    _PATCHED = True
