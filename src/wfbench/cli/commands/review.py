"""``wfbench review``: file-level commands over the review domain (``wfbench review score``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    """Add the ``review`` command group to ``app``."""
    review = typer.Typer(
        name="review",
        help="Score code-review artifacts against hidden labels.",
        no_args_is_help=True,
    )

    @review.command(
        "score",
        epilog="\b\nExamples:\n  wfbench review score review-output.json labels.json | jq .weighted_f1\n"
        "\n\b\nExit codes: 0 scored, 2 a malformed artifact or labels (one `wfbench: error:` line).",
        short_help="Score a review artifact against hidden labels (JSON).",
    )
    def score(
        artifact: Annotated[Path, typer.Argument(metavar="ARTIFACT", help="The agent's review-output.json.")],
        labels: Annotated[Path, typer.Argument(metavar="LABELS", help="The hidden review-labels.json.")],
    ) -> None:
        """Print the score of ARTIFACT against LABELS as JSON; a malformed artifact exits 2."""
        from wfbench.app.gating.review_scoring import score_review_files

        result = score_review_files(artifact, labels)
        typer.echo(json.dumps(result.to_mapping(), indent=2))

    app.add_typer(review)
