#!/bin/bash
set -euo pipefail
cat > /app/calc/__init__.py <<'PY'
"""A tiny statistics package."""


def mean(values):
    if not values:
        return 0.0
    return sum(values) / len(values)
PY
