"""PyInstaller runtime hook: runs in the bundled app before anything else is imported.

Offline and quiet whatever the user's environment says by default: Chroma's
telemetry off, the Hugging Face libraries offline (the bundle has none, but
a plug-in might), no tokenizer thread pools forked. A user may still
override each one explicitly.
"""

import os

for _key, _value in (("ANONYMIZED_TELEMETRY", "False"), ("HF_HUB_OFFLINE", "1"),
                     ("TRANSFORMERS_OFFLINE", "1"), ("TOKENIZERS_PARALLELISM", "false"),
                     ("CHROMA_TELEMETRY_DISABLED", "1")):
    os.environ.setdefault(_key, _value)
