"""Dialogs of the desktop app: first run (create the store) and unlock."""
