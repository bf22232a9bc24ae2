"""Agent CLIs behind the ModelCLI port: Claude Code, Codex, the stand-in agent."""
