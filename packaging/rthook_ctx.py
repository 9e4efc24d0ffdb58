"""PyInstaller runtime hook: runs in the bundled app before anything else is imported.

Offline and quiet whatever the user's environment says by default: Chroma's
telemetry off, the Hugging Face libraries offline (the bundle has none, but
a plug-in might), no tokenizer thread pools forked. A user may still
override each one explicitly.

OPENBLAS_NUM_THREADS=1 is the engine's own default (``search.blas_threads = 1``,
applied with threadpoolctl at the first search) from the start of the process:
opening a store derives its vector rotation with a 384x384 QR before any search,
and OpenBLAS's thread pool made that take 4.1 s on a busy 2-core machine, against
0.15 s in one thread (bench/dist_bench.py, engine ready).
"""

import os

for _key, _value in (("ANONYMIZED_TELEMETRY", "False"), ("HF_HUB_OFFLINE", "1"),
                     ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false"),
                     ("CHROMA_TELEMETRY_DISABLED", "1"), ("OPENBLAS_NUM_THREADS", "1")):
    os.environ.setdefault(_key, _value)
