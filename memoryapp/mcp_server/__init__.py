"""memoryapp as a Model Context Protocol server (the official `mcp` SDK): at /mcp in the web process
(http.py) and as `manage.py mcp` over stdio. Not named `mcp`: that would shadow the SDK."""
