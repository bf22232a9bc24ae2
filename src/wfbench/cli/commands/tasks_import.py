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
            help="YAML environment spec for every task (default: an editable install plus pytest);"
            " with --images, keys added to the image environment.",
            show_default=False,
        ),
    ] = None,
    images: Annotated[
        str | None,
        typer.Option(
            "--images",
            metavar="TEMPLATE",
            help="Run each task in its instance image: 'swebench' (SWE-bench's"
            " swebench/sweb.eval.x86_64.{instance_id}:latest, '__' written '_1776_') or a template"
            " with {instance_id}; needs --sandbox podman.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Convert SWE-bench-format task instances into a wfbench corpus (no network).

    \b
    Examples:
      wfbench tasks import swebench dev.jsonl --repos ~/mirrors --out corpora/swe
      wfbench tasks import swebench dev.jsonl --repos ~/mirrors --out corpora/swe --images swebench
      wfbench tasks validate corpora/swe/corpus.yaml      # every gold patch resolves its task
    """
    import yaml

    from wfbench.app.corpus.environment_spec import parse_environment
    from wfbench.app.corpus.swebench import import_instances, read_instances
    from wfbench.app.corpus.swebench_images import image_environment, image_name
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
    if images is not None:  # one instance id stands for all: the template and the keys, checked now
        sample = image_environment(image_name(images, "owner__name-1"), spec)
        parse_environment(sample, locator="--images", field="environment")
    if os.path.exists(os.path.join(out, "corpus.yaml")):
        raise InputError("already holds a corpus.yaml (choose a new --out)", source=out, field="--out")
    loaded = read_instances(instances)
    corpus = import_instances(
        loaded, source=instances, repos_dir=repos, out_dir=out, environment=spec, images=images
    )
    typer.echo(f"wrote {corpus}: {len(loaded)} task(s); next: wfbench tasks validate {corpus}")


def import_harbor(
    directories: Annotated[list[str], typer.Argument(metavar="DIR...", help="Harbor task directories.")],
    out: Annotated[str, typer.Option("--out", metavar="CORPUS_DIR", help="Where the corpus is written.")],
    network: Annotated[
        str,
        typer.Option(
            "--network",
            metavar="MODE",
            help="model-only (default), or host: tasks that ask for the internet keep the host's network.",
        ),
    ] = "model-only",
    reward_above: Annotated[
        float,
        typer.Option("--reward-above", metavar="X", help="The oracle passes when the reward is above X."),
    ] = 0.0,
) -> None:
    """Convert Harbor-format tasks (Terminal-Bench 2.0) into a wfbench corpus; builds each task's image.

    \b
    Examples:
      wfbench tasks import harbor tasks/* --out corpora/tb
      wfbench tasks validate corpora/tb/corpus.yaml --sandbox podman   # solve.sh resolves each task
    """
    from wfbench.app.corpus.harbor import ImportOptions
    from wfbench.app.corpus.harbor_import import NOTES_NAME, import_harbor
    from wfbench.cli import bootstrap as boot
    from wfbench.domain.errors import InputError

    if network not in ("model-only", "host"):
        raise InputError("must be model-only or host", field="--network")
    report = import_harbor(
        directories,
        out_dir=out,
        options=ImportOptions(network_host=network == "host", reward_above=reward_above),
        images=boot.image_workdirs(),
    )
    for note in report.notes:
        typer.echo(f"note: {note}")
    typer.echo(
        f"wrote {report.corpus}: {len(report.tasks)} task(s), notes in {NOTES_NAME}; "
        f"next: wfbench tasks validate {report.corpus} --sandbox podman"
    )


def export_harbor(
    corpus: Annotated[str, typer.Argument(metavar="CORPUS", help="A wfbench corpus YAML.")],
    out: Annotated[str, typer.Option("--out", metavar="DIR", help="Where the Harbor tasks are written.")],
    base_image: Annotated[
        str,
        typer.Option("--base-image", metavar="IMAGE", help="The FROM image of each task's Dockerfile."),
    ] = "python:3.12-slim",
) -> None:
    """Write a wfbench corpus's implementation tasks as Harbor task directories (docs/harbor.md).

    \b
    Examples:
      wfbench tasks export harbor corpus.yaml --out harbor-tasks
    """
    from wfbench.app.corpus.corpus import load_corpus
    from wfbench.app.corpus.harbor_export import export_corpus
    from wfbench.cli import bootstrap as boot

    loaded = load_corpus(corpus)
    report = export_corpus(loaded, out_dir=out, base_image=base_image, workspaces=boot.git_workspaces())
    for note in report.notes:
        typer.echo(f"note: {note}")
    typer.echo(f"wrote {len(report.tasks)} Harbor task(s) to {out}/")
