"""PyInstaller runtime hook: a stand-in for Chroma's OTLP gRPC span exporter.

``chromadb.telemetry.opentelemetry`` imports ``OTLPSpanExporter`` from the
OpenTelemetry gRPC exporter at module level, so every ``import chromadb``
loads gRPC (a 17 MB extension module) and protobuf: about 0.4 s of start-up
and 17 MB of bundle. Chroma creates an exporter only when an OpenTelemetry
collector endpoint and a granularity are configured, which ctx never does.
The bundle therefore leaves gRPC and the exporter out (ctx_platform.EXCLUDES)
and this hook registers a module of the same name whose exporter refuses
plainly, instead of the import failing. A pip install is unaffected.
"""

import importlib.util
import sys
import types

_NAME = "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"


class OTLPSpanExporter:
    """Stands in for the real exporter; constructing one says what is missing."""

    def __init__(self, *_args: object, **_kwargs: object) -> None:
        raise RuntimeError("this ctx build has no OpenTelemetry gRPC exporter: Chroma's "
                           "chroma_otel_* settings are not supported in the app bundle")


def _has_grpc() -> bool:
    # find_spec, not import: PyInstaller would otherwise collect gRPC for this hook
    try:
        return importlib.util.find_spec("grpc") is not None
    except ImportError:
        return False


def install() -> None:
    """Register the stand-in unless the real exporter can be (or has been) imported."""
    if _NAME in sys.modules or _has_grpc():
        return  # a build that kept gRPC uses the real exporter
    module = types.ModuleType(_NAME, __doc__)
    module.OTLPSpanExporter = OTLPSpanExporter  # type: ignore[attr-defined]
    sys.modules[_NAME] = module


install()
