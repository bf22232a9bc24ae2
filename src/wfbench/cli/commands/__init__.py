"""The other commands: doctor, gate, plan, promote, release, review, tasks, import, validate, view."""
