"""Options shared by commands, each declared once."""
