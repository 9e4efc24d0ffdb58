"""Nothing leaves the machine: the libraries ctx loads are kept offline, without telemetry.

``import engine`` calls :func:`keep_offline` before any of them is imported, since
each reads its switch once, when it loads. Without ``ORT_DISABLE_TELEMETRY``,
onnxruntime (1.29 on, Linux and macOS too) writes a device id and an event queue
(Python path, OS, CPU, memory, model file name) under
``$XDG_CACHE_HOME/Microsoft/DeveloperTools/.onnxruntime/`` for upload to Microsoft.
The switches are set whatever the environment said: a promise of ctx, not a default.
"""

from __future__ import annotations

import os

SWITCHES: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",  # onnxruntime: no 1DS uploader, events or device id
    "ANONYMIZED_TELEMETRY": "False",  # Chroma's product telemetry
    "HF_HUB_OFFLINE": "1",  # huggingface_hub: no request at all
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",  # no token read from the user's HF login
    "TRANSFORMERS_OFFLINE": "1",  # transformers and sentence-transformers
    "HF_DATASETS_OFFLINE": "1",
    "OTEL_SDK_DISABLED": "true",  # OpenTelemetry (Chroma's tracing): no exporter
    "DO_NOT_TRACK": "1",  # the common opt-out other libraries read
}


def keep_offline() -> None:
    """Set every library's offline and no-telemetry switch in this process (and the
    processes it starts)."""
    for name, value in SWITCHES.items():
        if os.environ.get(name) != value:
            os.environ[name] = value

