"""Benchmarks and fits: each module runs as ``python -m bench.NAME`` and prints a table
(median, p95, ratios against a baseline in the same run, the machine's load); none is a
test, and no timing is asserted anywhere. The engine is reached through ``engine`` (its
public face) and ``engine.lab`` (the map of what benchmarks use behind it) only
(tests/test_bench_seam.py). tests/test_bench_imports.py checks that every module loads and
that every engine name it imports (inside functions too) is where it says;
tests/test_layers.py that this map names every module.

The map, by what is measured:

- shared helpers: ``stats`` (percentiles, tables), ``chroma_server`` (a `chroma run` on
  this machine, started and stopped), ``digest`` (a sha256 over every
  payload a run makes: same digests, same payloads), ``models`` (which model, and the
  cached store's name it decides), ``corpus`` (this machine's Python sources and docs);
- retrieval quality and its fits (train/dev splits only): ``locomo`` (LoCoMo dev),
  ``scifact`` and ``scifact_data`` (SciFact train), ``fit_rank``, ``rank_listwise``,
  ``fit_window``, ``fit_context``, ``fit_pack``, ``chunk_sweep`` (fit files in
  ``bench/data/``), ``peer_compare`` and ``peer_llamaindex`` (ctx beside LlamaIndex);
- recall of coding sessions: ``recall_quality`` (with ``recall_scoring``),
  ``recall_ablate`` (each ranking knob on vs off, cross-validated), ``recall_linevec`` (a
  second, detail vector per tool call: an experiment), ``transcripts_recall``, ``recall_coverage``, ``recall_adapt``, ``recall_bench``
  (indexing and latency), ``recall_scale`` (1,000 sessions: indexing by stage, recall
  latency and its stages, a digest of every hit);
- speed of the engine: ``store_bench`` (ingest, lanes), ``stage_latency`` (build_context
  by stage), ``keyword_lane``, ``memory_index``, ``far_add`` (an add far out of id order
  at 1M rows: the side block against the rebuild), ``vector_pick`` (the prefilter's
  candidates at 1M: main's argpartition against the sampled threshold) and
  ``vector_rebuild_bench`` (the vector index), ``chroma_gil``, ``ingest_stages``, ``ingest_mem``, ``blob_scan``,
  ``blob_savings``, ``embed_bench``, ``embed_precision`` and ``embed_determinism`` (the
  model; the last: a text's vector the same in any batch),
  ``backup_bench``, ``delete_bench``, ``engine_scale`` (cached 100k/500k/1M stores of
  sessions and documents: open -> first answer, build_context/search/recall p50/p95,
  peak RSS, backup/restore/delete 10%, digests of two fresh builds) with
  ``scale_vectors`` (its MiniLM-like document vectors, made without the model);
- the front ends and the wire: ``ipc_load``, ``serve_start``, ``agents_bench`` (hooks and
  MCP), ``app_launch``, ``gui_bench``, ``dist_bench`` (the bundle against the pip install);
- security: ``vector_attack`` (the vector rotation attack).

Benchmarks read engine internals on purpose (lanes, rerank features, stores); a move
inside engine/ updates them in the same change (the test above fails otherwise).
"""
