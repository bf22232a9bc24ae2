"""Result rows and what is computed over them: the row schema and error kinds,
aggregation per (task, arm) with savings, and the measurement health of each arm."""
