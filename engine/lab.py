"""The lab bench's seam: the one engine surface ``bench/`` uses beside ``engine``'s face.

Benchmarks measure and tune stages the product hides behind ``ContextEngine``: a store
opened with a chosen embedder, the ranking stages a fit sweeps, the writer a bench feeds
directly to grow a store fast, the parsers and chunkers whose output a bench counts.
Everything they reach for is named here (and only here), so a rename inside the engine
breaks ``tests/test_bench_seam.py`` at once, not a benchmark run weeks later. Nothing in
the product imports this module; it is loaded lazily like ``engine`` itself, so a bench
that times an import or an open pays only for what it names.

The map (name: what a bench uses it for; its home in the engine):

Models and config (a store opened with a given embedder)
- ``make_embedder``: the embedder a config names (embedding.factory)
- ``EmbeddingConfig``, ``StoreConfig``, ``IngestConfig``, ``ChunkingConfig``: the
  sections a bench builds by hand (their parts' config modules)
- ``FakeEmbedder``: the deterministic test embedder (embedding.fake)
- ``OnnxEmbedder``, ``find_export``, ``export_onnx``, ``MODEL_NAME``, ``minilm_path``:
  the model's ONNX files and its runtimes (embedding.onnx*, embedding.minilm)
- ``encode_documents``: documents through an embedder as ingest sends them
  (embedding.base); ``token_batches``: ingest's batches by length (embedding.batching)
- ``keep_offline``: telemetry and downloads off before a library loads (offline)
- ``crypto_keys``: unlocking a store's data key by hand (crypto.keys)

Ranking stages (what the fit_* and recall benches sweep)
- ``plan_query``: a query planned once (flows.search.plan); ``analyze_query``: its
  words and phrases (retrieval.query)
- ``run_lanes``, ``keyword_lane``: the keyword and vector lanes (flows.search.lanes)
- ``rank_hits``, ``distinct_sources_of``: fuse and rerank (flows.search.ranking)
- ``expand_sessions``: the session expansion (flows.search.session_expand)
- ``rrf``: reciprocal rank fusion (retrieval.fusion); ``fts_query``: the FTS5 match
  string (retrieval.fts_match); ``suppress_near_duplicates`` (retrieval.dedupe)
- ``DEFAULT_PROFILES``, ``FEATURES``, ``TRANSCRIPT_FITTED``: the rerank's per-kind
  profiles and the transcript profile's fitted weights (retrieval.profiles)
- ``asks_shown``, ``named_tools``: the role cues of a question (retrieval.lexicon);
  ``context_and_ask``: a question's context clause and its ask (retrieval.turn_roles)
- ``Filters``: the filters a search applies to rows (store.vault.rows)
- ``TurnPrior``, ``format_time``: the packer's turn prior and time format (packing)
- ``fit_map``: the query adapter's fit (retrieval.adapt_fit); ``training_set``,
  ``learned``, ``query_adapter``, ``fit_recall_adapter``: recall's adapter fitted
  on a store (flows.recall.adapt)

Ingest parts (what the chunk, blob and store benches count)
- ``load_file``, ``load_text``, ``walk_paths``, ``chunk_document``, ``embed_text``,
  ``blob_kind``, ``measure_blob``: the ingest parts one file goes through (ingest.*)
- ``parse_claude``, ``parse_codex``, ``detect_agent``, ``excerpt``,
  ``RECALL_CHUNK_KINDS``, ``Coverage``, ``Held``, ``COVERAGE_KINDS``,
  ``transcript_lines``: transcripts parsed, chunked and shown (recall.*)

Writer and stores (growing and probing stores fast)
- ``Writer``: the single writer a bench feeds directly (flows.ingest.writer)
- ``embed_inputs``: the texts a vector rebuild embeds (store.vault.rebuild);
  ``rebuild_vectors``, ``chunk_key``: the rebuild itself (flows.keeping.vector_rebuild)
- ``MemoryVectors``, ``ExactIndex``, ``ChromaVectors``, ``SnapshotFile``,
  ``KeyedIds``, ``principal_basis``, ``BASIS_SAMPLE``: the vector stores (store.vectors);
  ``score_rows``: the index's row scores, the same bits wherever a row lies
  (store.vectors.exact_index; bench.vector_pick's old query)
- ``percentile``: the metrics' percentile, so tables match ``ctx metrics`` (metrics)

Modules a bench instruments (it wraps their functions to time each stage, and undoes it)
- ``recall_entry``, ``recall_turn_hits``, ``recall_turns``, ``recall_sync``,
  ``recall_adapt``, ``recall_embedview`` (flows.recall.*, recall.embedview)
- ``search_lanes``, ``search_ranking``, ``search_session_words``,
  ``search_session_expand`` (flows.search.*)
- ``ingest_vector_stage`` (flows.ingest.vector_stage)
- ``vault_core``, ``vault_keyword_reads``, ``vault_adapt``, ``vault_sources``,
  ``vault_embed_cache`` (store.vault.*)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.lazy import resolve

# Name -> "module" (same name there), "module:name", or "module:" (the module itself).
_WHERE: dict[str, str] = {
    "make_embedder": "engine.embedding.factory",
    "EmbeddingConfig": "engine.embedding.config",
    "StoreConfig": "engine.store.config",
    "IngestConfig": "engine.ingest.config",
    "ChunkingConfig": "engine.ingest.config",
    "FakeEmbedder": "engine.embedding.fake",
    "OnnxEmbedder": "engine.embedding.onnx",
    "find_export": "engine.embedding.onnx_files",
    "MODEL_NAME": "engine.embedding.onnx_files",
    "export_onnx": "engine.embedding.onnx_export:export",
    "minilm_path": "engine.embedding.minilm",
    "encode_documents": "engine.embedding.base",
    "token_batches": "engine.embedding.batching",
    "keep_offline": "engine.offline",
    "crypto_keys": "engine.crypto.keys:",
    "plan_query": "engine.flows.search.plan",
    "analyze_query": "engine.retrieval.query",
    "run_lanes": "engine.flows.search.lanes",
    "keyword_lane": "engine.flows.search.lanes",
    "rank_hits": "engine.flows.search.ranking",
    "distinct_sources_of": "engine.flows.search.ranking",
    "expand_sessions": "engine.flows.search.session_expand",
    "rrf": "engine.retrieval.fusion",
    "fts_query": "engine.retrieval.fts_match",
    "suppress_near_duplicates": "engine.retrieval.dedupe",
    "DEFAULT_PROFILES": "engine.retrieval.profiles",
    "FEATURES": "engine.retrieval.profiles",
    "TRANSCRIPT_FITTED": "engine.retrieval.profiles",
    "asks_shown": "engine.retrieval.lexicon",
    "named_tools": "engine.retrieval.lexicon",
    "context_and_ask": "engine.retrieval.turn_roles",
    "Filters": "engine.store.vault.rows",
    "TurnPrior": "engine.packing.turn_prior",
    "format_time": "engine.packing.render",
    "fit_map": "engine.retrieval.adapt_fit",
    "training_set": "engine.flows.recall.adapt",
    "learned": "engine.flows.recall.adapt",
    "query_adapter": "engine.flows.recall.adapt",
    "fit_recall_adapter": "engine.flows.recall.adapt:fit",
    "load_file": "engine.ingest.loaders",
    "load_text": "engine.ingest.loaders",
    "walk_paths": "engine.ingest.walker",
    "chunk_document": "engine.ingest.chunking",
    "embed_text": "engine.ingest.embedtext",
    "blob_kind": "engine.ingest.blobs",
    "measure_blob": "engine.ingest.blobs:measure",
    "parse_claude": "engine.recall.claude",
    "parse_codex": "engine.recall.codex",
    "detect_agent": "engine.recall.model",
    "excerpt": "engine.recall.present",
    "RECALL_CHUNK_KINDS": "engine.recall.chunks",
    "Coverage": "engine.recall.coverage",
    "Held": "engine.recall.coverage",
    "COVERAGE_KINDS": "engine.recall.coverage:KINDS",
    "transcript_lines": "engine.recall.coverage",
    "Writer": "engine.flows.ingest.writer",
    "embed_inputs": "engine.store.vault.rebuild",
    "rebuild_vectors": "engine.flows.keeping.vector_rebuild:rebuild",
    "chunk_key": "engine.flows.keeping.vector_rebuild",
    "cap_heap_retention": "engine.embedding.heap",
    "MemoryVectors": "engine.store.vectors.memory",
    "ExactIndex": "engine.store.vectors.exact_index",
    "score_rows": "engine.store.vectors.exact_index",
    "ChromaVectors": "engine.store.vectors.index",
    "SnapshotFile": "engine.store.vectors.snapshot",
    "KeyedIds": "engine.store.vectors.ids",
    "principal_basis": "engine.store.vectors.memory",
    "BASIS_SAMPLE": "engine.store.vectors.memory",
    "percentile": "engine.metrics",
    "recall_entry": "engine.flows.recall.entry:",
    "recall_turn_hits": "engine.flows.recall.hits:",
    "recall_turns": "engine.flows.recall.turns:",
    "recall_sync": "engine.flows.recall.sync:",
    "recall_adapt": "engine.flows.recall.adapt:",
    "recall_embedview": "engine.recall.embedview:",
    "search_lanes": "engine.flows.search.lanes:",
    "search_ranking": "engine.flows.search.ranking:",
    "search_session_words": "engine.flows.search.session_words:",
    "search_session_expand": "engine.flows.search.session_expand:",
    "ingest_vector_stage": "engine.flows.ingest.vector_stage:",
    "vault_core": "engine.store.vault.core:",
    "vault_keyword_reads": "engine.store.vault.keyword_reads:",
    "vault_adapt": "engine.store.vault.adapt:",
    "vault_sources": "engine.store.vault.sources:",
    "vault_embed_cache": "engine.store.vault.embed_cache:",
}

if TYPE_CHECKING:
    from engine.crypto import keys as crypto_keys
    from engine.embedding.base import encode_documents
    from engine.embedding.batching import token_batches
    from engine.embedding.config import EmbeddingConfig
    from engine.embedding.factory import make_embedder
    from engine.embedding.fake import FakeEmbedder
    from engine.embedding.heap import cap_heap_retention
    from engine.embedding.minilm import minilm_path
    from engine.embedding.onnx import OnnxEmbedder
    from engine.embedding.onnx_export import export as export_onnx
    from engine.embedding.onnx_files import MODEL_NAME, find_export
    from engine.flows.ingest import vector_stage as ingest_vector_stage
    from engine.flows.ingest.writer import Writer
    from engine.flows.keeping.vector_rebuild import chunk_key
    from engine.flows.keeping.vector_rebuild import rebuild as rebuild_vectors
    from engine.flows.recall import adapt as recall_adapt
    from engine.flows.recall import entry as recall_entry
    from engine.flows.recall import hits as recall_turn_hits
    from engine.flows.recall import sync as recall_sync
    from engine.flows.recall import turns as recall_turns
    from engine.flows.recall.adapt import fit as fit_recall_adapter
    from engine.flows.recall.adapt import learned, query_adapter, training_set
    from engine.flows.search import lanes as search_lanes
    from engine.flows.search import ranking as search_ranking
    from engine.flows.search import session_expand as search_session_expand
    from engine.flows.search import session_words as search_session_words
    from engine.flows.search.lanes import keyword_lane, run_lanes
    from engine.flows.search.plan import plan_query
    from engine.flows.search.ranking import distinct_sources_of, rank_hits
    from engine.flows.search.session_expand import expand_sessions
    from engine.ingest.blobs import blob_kind
    from engine.ingest.blobs import measure as measure_blob
    from engine.ingest.chunking import chunk_document
    from engine.ingest.config import ChunkingConfig, IngestConfig
    from engine.ingest.embedtext import embed_text
    from engine.ingest.loaders import load_file, load_text
    from engine.ingest.walker import walk_paths
    from engine.metrics import percentile
    from engine.offline import keep_offline
    from engine.packing.render import format_time
    from engine.packing.turn_prior import TurnPrior
    from engine.recall import embedview as recall_embedview
    from engine.recall.chunks import RECALL_CHUNK_KINDS
    from engine.recall.claude import parse_claude
    from engine.recall.codex import parse_codex
    from engine.recall.coverage import KINDS as COVERAGE_KINDS
    from engine.recall.coverage import Coverage, Held, transcript_lines
    from engine.recall.model import detect_agent
    from engine.recall.present import excerpt
    from engine.retrieval.adapt_fit import fit_map
    from engine.retrieval.dedupe import suppress_near_duplicates
    from engine.retrieval.fts_match import fts_query
    from engine.retrieval.fusion import rrf
    from engine.retrieval.lexicon import asks_shown, named_tools
    from engine.retrieval.profiles import DEFAULT_PROFILES, FEATURES, TRANSCRIPT_FITTED
    from engine.retrieval.query import analyze_query
    from engine.retrieval.turn_roles import context_and_ask
    from engine.store.config import StoreConfig
    from engine.store.vault import adapt as vault_adapt
    from engine.store.vault import core as vault_core
    from engine.store.vault import embed_cache as vault_embed_cache
    from engine.store.vault import keyword_reads as vault_keyword_reads
    from engine.store.vault import sources as vault_sources
    from engine.store.vault.rebuild import embed_inputs
    from engine.store.vault.rows import Filters
    from engine.store.vectors.exact_index import ExactIndex, score_rows
    from engine.store.vectors.ids import KeyedIds
    from engine.store.vectors.index import ChromaVectors
    from engine.store.vectors.memory import BASIS_SAMPLE, MemoryVectors, principal_basis
    from engine.store.vectors.snapshot import SnapshotFile

__all__ = [  # the names of _WHERE (tests/test_bench_seam.py)
    "BASIS_SAMPLE", "COVERAGE_KINDS", "DEFAULT_PROFILES", "FEATURES", "MODEL_NAME",
    "RECALL_CHUNK_KINDS", "TRANSCRIPT_FITTED", "ChromaVectors", "ChunkingConfig", "Coverage",
    "EmbeddingConfig", "ExactIndex", "FakeEmbedder", "Filters", "Held", "IngestConfig",
    "KeyedIds", "MemoryVectors", "OnnxEmbedder", "SnapshotFile", "StoreConfig",
    "TurnPrior", "Writer", "analyze_query", "asks_shown", "blob_kind", "cap_heap_retention",
    "chunk_document", "chunk_key", "context_and_ask",
    "crypto_keys", "detect_agent", "distinct_sources_of", "embed_inputs", "embed_text",
    "encode_documents", "excerpt", "expand_sessions", "export_onnx", "find_export",
    "fit_map", "fit_recall_adapter", "format_time", "fts_query", "ingest_vector_stage",
    "keep_offline", "keyword_lane", "learned", "load_file", "load_text",
    "make_embedder", "measure_blob", "minilm_path", "named_tools", "parse_claude", "parse_codex",
    "percentile", "plan_query", "principal_basis", "query_adapter", "rank_hits",
    "rebuild_vectors", "recall_adapt", "recall_embedview", "recall_entry",
    "recall_sync", "recall_turn_hits", "recall_turns", "rrf", "run_lanes", "score_rows",
    "search_lanes", "search_ranking", "search_session_expand", "search_session_words",
    "suppress_near_duplicates", "token_batches", "training_set", "transcript_lines",
    "vault_adapt", "vault_core", "vault_embed_cache", "vault_keyword_reads", "vault_sources",
    "walk_paths",
]


def __getattr__(name: str) -> Any:
    return resolve(_WHERE, __name__, name)
