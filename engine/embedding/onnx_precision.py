"""Export-time rewrites of the MiniLM graph: float16 storage, and the int8 document model.

Both run where the export runs (``onnx`` and onnxruntime's quantisation tools
are there); the app and the engine only load the results.

``store_float16``: every float32 weight of 1024 values or more is stored as
float16 and widened back by a Cast node, which onnxruntime folds into a
float32 constant when the session loads; the embedding tables stay float16 in
memory and only the rows read are widened. The model file halves (90 -> 45
MB), it still computes in float32, and its vectors stay within 1e-6 cosine of
sentence-transformers' (the export's probe check holds it to
``MIN_PROBE_COSINE``).

``quantize_int8``: dynamic quantisation of the weight matrices (MatMul with a
constant right side, per output channel, 7-bit range, the only safe one for
AVX2's u8 x s8 products without VNNI); activations are quantised on the fly.
Attention's own products (two activations) stay float32, and so do the
embedding tables (then stored as float16 like the float32 model's: the int8
file is 35 MB). On this project's
2-core AVX2 machine it embeds SciFact chunk texts 1.4-1.5x faster than the float32
model, at cosine 0.994 on average against it (0.989 at worst)
(``python -m bench.embed_precision``).
It serves documents only; queries use the float32 model (``engine.embedding.onnx``).
"""

from __future__ import annotations

from pathlib import Path

# Tensors under this many values (the 384-wide biases and norms, the int8 model's
# 384-wide scales) stay float32: halving them saves nothing worth a Cast. The 1536-wide
# feed-forward biases and scales are halved; the probe checks hold with them.
MIN_FLOAT16_SIZE = 1024


def store_float16(src: Path, dst: Path) -> None:
    """Write ``src`` to ``dst`` with its large float32 weights stored as float16.

    A table read only by Gather nodes (the word, position and type embeddings) stays
    float16 in memory too: the Gather reads float16 rows and a Cast widens just them,
    which gives the same numbers as widening the table first (23 MB less per session).
    Every other weight is widened by a Cast that the session folds at load.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    users: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            users.setdefault(name, []).append(node)
    widen, halves = [], []
    after: dict[int, onnx.NodeProto] = {}  # id(Gather node) -> the Cast that follows it
    for init in list(graph.initializer):
        arr = numpy_helper.to_array(init)
        if arr.dtype != np.float32 or arr.size < MIN_FLOAT16_SIZE:
            continue
        half = numpy_helper.from_array(arr.astype(np.float16), init.name + "__f16")
        halves.append(half)
        graph.initializer.remove(init)
        readers = users.get(init.name, [])
        if readers and all(n.op_type == "Gather" and list(n.input).count(init.name) == 1
                           and n.input[0] == init.name for n in readers):
            for n in readers:
                n.input[0] = half.name
                rows = n.output[0]
                n.output[0] = rows + "__f16"
                after[id(n)] = helper.make_node("Cast", [n.output[0]], [rows],
                                                to=TensorProto.FLOAT, name=rows + "__widen")
            continue
        widen.append(helper.make_node("Cast", [half.name], [init.name], to=TensorProto.FLOAT,
                                      name=init.name + "__widen"))
    graph.initializer.extend(halves)
    nodes = []
    for node in graph.node:
        nodes.append(node)
        if id(node) in after:
            nodes.append(after[id(node)])
    del graph.node[:]
    graph.node.extend(widen + nodes)  # a widening Cast precedes every use of its weight
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
