"""The scripted model provider: its script, wire formats, responses and records."""
