"""The key proxy (its handler and rules), usage at the wire, the registry proxy."""
