#!/bin/bash
out="$(sh /app/greet.sh "$EXPECTED_NAME")"
if [ "$out" = "Hello, $EXPECTED_NAME!" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
