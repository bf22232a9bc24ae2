#!/bin/bash
# Harbor's contract: the reward goes to /logs/verifier/reward.txt.
if python3 /tests/check_total.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
