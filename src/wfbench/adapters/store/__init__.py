"""What a sweep writes: JSONL rows, streamed files, the sweep directory and its claim, clock."""
