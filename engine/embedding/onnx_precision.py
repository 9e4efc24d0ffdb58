"""Export-time rewrites of the MiniLM graph: float16 storage, and the int8 document model.

Both run where the export runs (``onnx`` and onnxruntime's quantisation tools
are there); the app and the engine only load the results.

``store_float16``: every float32 weight of 1024 values or more is stored as
float16 and widened back by a Cast node, which onnxruntime folds into a
float32 constant when the session loads. The model file halves (90 -> 45 MB),
it still computes in float32, and its vectors stay within 1e-6 cosine of
sentence-transformers' (the export's probe check holds it to
``MIN_PROBE_COSINE``).

``quantize_int8``: dynamic quantisation of the weight matrices (MatMul with a
constant right side, per output channel, 7-bit range, the only safe one for
AVX2's u8 x s8 products without VNNI); activations are quantised on the fly.
Attention's own products (two activations) stay float32, and so do the
embedding tables (then stored as float16 like the float32 model's: the int8
file is 35 MB). On this project's
2-core AVX2 machine it embeds 256-piece texts 1.4-1.5x faster than the float32
model, at cosine 0.994 on average against it over SciFact abstracts (0.987 at
worst), measured with /tmp scripts recorded in the closing note of issue 12.
It serves documents only; queries use the float32 model (``engine.embedding.onnx``).
"""

from __future__ import annotations

from pathlib import Path

MIN_FLOAT16_SIZE = 1024  # smaller tensors (biases, norms) stay float32: no gain in halving


def store_float16(src: Path, dst: Path) -> None:
    """Write ``src`` to ``dst`` with its large float32 weights stored as float16."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    casts, halves = [], []
    for init in list(graph.initializer):
        arr = numpy_helper.to_array(init)
        if arr.dtype != np.float32 or arr.size < MIN_FLOAT16_SIZE:
            continue
        half = numpy_helper.from_array(arr.astype(np.float16), init.name + "__f16")
        halves.append(half)
        casts.append(helper.make_node("Cast", [half.name], [init.name], to=TensorProto.FLOAT,
                                      name=init.name + "__widen"))
        graph.initializer.remove(init)
    graph.initializer.extend(halves)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)  # a Cast precedes every use of its weight
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def quantize_int8(src: Path, dst: Path) -> None:
    """Write the int8 document model of the float32 graph ``src`` to ``dst``."""
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # its advice to pre-process applies to static quantisation
    try:
        quantize_dynamic(str(src), str(dst), weight_type=QuantType.QInt8, per_channel=True,
                         reduce_range=True, op_types_to_quantize=["MatMul"],
                         extra_options={"MatMulConstBOnly": True})
    finally:
        quiet.setLevel(level)
