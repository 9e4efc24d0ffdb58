"""Status values as a person reads them (shared by `ctx status` and the app's Health panel)."""

from __future__ import annotations

from typing import Any


def memory_line(mem: dict[str, Any]) -> str:
    """``status``'s ``vectors_in_memory`` as one line: what the queries read vectors from."""
    held = mem.get("bytes", 0)
    size = f"{mem.get('vectors', 0)} vectors, " + (
        f"{held / 2**20:.0f} MB" if held >= 2**20 else f"{held / 2**10:.0f} KB")
    state = str(mem.get("state"))
    if state == "empty":
        return "not loaded yet (a served engine loads it at start; queries read the index)"
    if mem.get("kind") == "exact":
        return f"exact index, {size}"
    if mem.get("kind") == "prefilter":  # the memory backend past store.exact_search_max
        return f"index with a prefilter, {size}"
    if mem.get("kind") == "cache":
        return {"ready": f"vector cache, {size}",
                "loading": "vector cache loading (queries read the index meanwhile)",
                "off": "none: the store is over store.vector_cache_mb, vectors are read "
                       "from the index"}.get(state, state)
    return "none (vectors are read from the index)"
