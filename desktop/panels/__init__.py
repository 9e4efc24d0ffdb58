"""The main window's panels: one module each; they react to the EngineHost's signals
and never call each other."""
