"""`ctx mcp`: the Model Context Protocol server (stdio) that coding agents use."""
