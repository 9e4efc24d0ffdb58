"""The Qt tray application (PySide6). Not built yet: no issue has asked for it so far.

It will talk to the engine only through ``engine``'s public API (see DESIGN.md).
"""
