"""Where cells run besides the local pool: a Ray cluster."""
