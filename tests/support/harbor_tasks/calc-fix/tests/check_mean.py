import sys

sys.path.insert(0, "/app")
from calc import mean  # noqa: E402

assert mean([]) == 0.0
assert mean([1, 2, 3]) == 2
print("ok")
