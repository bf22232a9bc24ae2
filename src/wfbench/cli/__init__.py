"""The command line: thin Typer commands over one composition root and the use cases."""
