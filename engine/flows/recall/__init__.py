"""Recall: coding-session memory, synced from transcripts and ranked for an agent.

- ``entry``     the recall entry points: sync, the recall call, auto context;
- ``sync``      transcript folders synced into the store, incrementally;
- ``auto``      ``recall --auto``: recent sessions, related memory, failures to avoid;
- ``turns``     chunks ranked for recall, as chunks or turns;
- ``parts``     the parts of a call or request; ``roles`` the chunk of the role a
  question asks for ranked up;
- ``hits``      what a recall hit shows: its session line and excerpt;
- ``adapt``     recall's learned reader, fitted from the store's sessions.
"""
