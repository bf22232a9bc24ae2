"""ReviewArtifact.to_mapping pinned directly (its mutants only timed out under the round-trip property)."""

from __future__ import annotations

import json

from wfbench.domain.review.artifact import ReviewArtifact, parse_review_artifact
from wfbench.domain.review.fields import Verdict


def test_an_artifact_maps_to_exactly_the_schema_1_document():
    """schema_version 1, the verdict's text and the findings list: no other key, no other value."""
    assert ReviewArtifact(Verdict.REQUEST_CHANGES).to_mapping() == {
        "schema_version": 1,
        "verdict": "request_changes",
        "findings": [],
    }


def test_the_mapping_of_a_parsed_artifact_parses_back_to_it():
    """to_mapping is what parse_review_artifact reads (checked on one example, without Hypothesis)."""
    artifact = ReviewArtifact(Verdict.APPROVE)
    assert parse_review_artifact(json.dumps(artifact.to_mapping()).encode()) == artifact
