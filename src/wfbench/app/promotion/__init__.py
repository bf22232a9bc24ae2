"""Put a promoted skill into a repository, and gate an agent runtime release."""
