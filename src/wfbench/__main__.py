"""``python -m wfbench`` runs the CLI."""

from wfbench.cli.main import main

if __name__ == "__main__":
    main()
