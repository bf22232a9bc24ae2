"""``wfbench tasks import swebench INSTANCES.jsonl --repos DIR --out CORPUS_DIR`` (docs/swebench.md)."""

from __future__ import annotations

import os
from typing import Annotated

import typer


def import_swebench(
    instances: Annotated[str, typer.Argument(metavar="INSTANCES.jsonl", help="SWE-bench-format instances.")],
    repos: Annotated[
        str,
        typer.Option(
            "--repos", metavar="DIR", help="Local clones: DIR/owner__name (work tree, bare or .bundle)."
        ),
    ],
    out: Annotated[str, typer.Option("--out", metavar="CORPUS_DIR", help="Where the corpus is written.")],
    environment: Annotated[
        str | None,
        typer.Option(
            "--environment",
            metavar="FILE",
            help="YAML environment spec for every task (default: an editable install plus pytest).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Convert SWE-bench-format task instances into a wfbench corpus (no network).

    \b
    Examples:
      wfbench tasks import swebench dev.jsonl --repos ~/mirrors --out corpora/swe
      wfbench tasks validate corpora/swe/corpus.yaml      # every gold patch resolves its task
    """
    import yaml

    from wfbench.app.corpus.environment_spec import parse_environment
    from wfbench.app.corpus.swebench import import_instances, read_instances
    from wfbench.domain.errors import InputError

    spec = None
    if environment is not None:
        try:
            with open(environment, encoding="utf-8") as handle:
                spec = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise InputError(f"cannot read the environment spec: {exc}", source=environment) from None
        try:
            parse_environment(spec, locator="", field="environment")
        except InputError as exc:
            raise exc.located(source=environment) from None
    if os.path.exists(os.path.join(out, "corpus.yaml")):
        raise InputError("already holds a corpus.yaml (choose a new --out)", source=out, field="--out")
    loaded = read_instances(instances)
    corpus = import_instances(loaded, source=instances, repos_dir=repos, out_dir=out, environment=spec)
    typer.echo(f"wrote {corpus}: {len(loaded)} task(s); next: wfbench tasks validate {corpus}")
