import pathlib
import sys

total = pathlib.Path("/app/total.txt")
sys.exit(0 if total.is_file() and total.read_text() == "49\n" else 1)
