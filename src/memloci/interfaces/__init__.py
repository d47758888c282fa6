"""User-facing interfaces (layer: interfaces): the command line, later REST, MCP and chat."""
