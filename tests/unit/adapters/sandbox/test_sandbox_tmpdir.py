"""Where the bwrap sandbox's TMPDIR goes (adapters/sandbox/tmpdir.py), from the mounts' targets alone.

bwrap's command line with a runtime under /tmp, and the real sandbox, are tested in
tests/integration/sandbox/test_sandbox_tmp_runtime.py.
"""

from __future__ import annotations

from wfbench.adapters.sandbox.tmpdir import mount_targets, private_tmpdir


def test_mount_targets_reads_every_kind_of_mount_up_to_the_command() -> None:
    args = [
        "bwrap",
        "--unshare-pid",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--size",
        "9",
        "--tmpfs",
        "/tmp",
        "--ro-bind-try",
        "/etc/x",
        "/etc/x",
        "--bind",
        "/h",
        "/workspace",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--dir",
        "/d",
        "--remount-ro",
        "/",
        "--chdir",
        "/workspace",
        "--",
        "--tmpfs",
        "/not-a-mount",
    ]
    assert mount_targets(args) == ("/usr", "/bin", "/tmp", "/etc/x", "/workspace", "/proc", "/dev", "/d")


def test_tmpdir_is_slash_tmp_when_nothing_is_mounted_inside_it() -> None:
    assert private_tmpdir(("/usr", "/tmp", "/home/agent", "/tmpfoo", "/workspace")) == "/tmp"


def test_a_mount_inside_slash_tmp_gives_tmpdir_a_tmpfs_of_its_own_beside_it() -> None:
    targets = ("/usr", "/tmp", "/tmp/clone/.venv", "/tmp/clone/.venv/lib/python3.11/site-packages")
    assert private_tmpdir(targets) == "/tmp/wfbench-tmp"


def test_the_dedicated_tmpdir_never_lies_in_contains_or_equals_a_mount() -> None:
    assert private_tmpdir(("/tmp", "/tmp/wfbench-tmp")) == "/wfbench-tmp"
    assert private_tmpdir(("/tmp", "/tmp/wfbench-tmp/x")) == "/wfbench-tmp"
    assert private_tmpdir(("/tmp", "/tmp/a", "/wfbench-tmp/b", "/tmp/wfbench-tmp")) == "/wfbench-tmp-2"
    assert private_tmpdir(
        ("/tmp", "/tmp/wfbench-tmp", "/wfbench-tmp", "/wfbench-tmp-2", "/wfbench-tmp-3/y")
    ) == ("/wfbench-tmp-4")
    # a name that only starts like a mount is not inside it
    assert private_tmpdir(("/tmp", "/tmp/wfbench-tmpx")) == "/tmp/wfbench-tmp"


def test_slash_tmp_bound_over_or_missing_is_never_tmpdir() -> None:
    """A policy mount at /tmp itself (a second /tmp target) or no /tmp tmpfs: a path outside /tmp."""
    assert private_tmpdir(("/tmp", "/tmp")) == "/wfbench-tmp"
    assert private_tmpdir(("/usr", "/workspace")) == "/tmp/wfbench-tmp"
