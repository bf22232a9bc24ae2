"""``wfbench tasks export harbor``: the demo corpus's git tasks as Harbor tasks that Harbor itself loads."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import yaml

from tests.integration.report.test_export_readers import HARBOR_PYTHON, _reader
from tests.support.demo_run import IMPL_TASKS, wfbench

LOAD_TASKS = """
import json, sys, warnings
from pathlib import Path
from harbor.models.task.config import TaskConfig
from harbor.models.task.task import Task
warnings.simplefilter("error")  # a deprecated key would warn
out = {}
for path in sys.argv[1:]:
    config = TaskConfig.model_validate_toml(Path(path, "task.toml").read_text())
    task = Task(path)
    out[Path(path).name] = {
        "network": config.environment.network_mode.value,
        "workdir": config.environment.workdir,
        "instruction": task.instruction[:40],
        "resources": [config.environment.cpus, config.environment.memory_mb, config.environment.storage_mb],
    }
print(json.dumps(out))
"""


def test_the_exported_demo_tasks_load_in_harbors_own_task_model(tmp_path):
    """fix-median declares limits: they load as Harbor's own cpus / memory_mb / storage_mb."""
    python = _reader(HARBOR_PYTHON, "WFBENCH_REQUIRE_HARBOR", "Harbor's task models (harbor 0.25.0)")
    from wfbench.demo import materialize

    corpus = Path(materialize(str(tmp_path / "demo")))
    spec = yaml.safe_load(corpus.read_text())
    spec["tasks"][0]["limits"] = {"cpus": 1.5, "memory": "1G", "storage": "2G"}
    corpus.write_text(yaml.safe_dump(spec, sort_keys=False))
    done = wfbench("tasks", "export", "harbor", str(corpus), "--out", str(tmp_path / "h"))
    assert done.returncode == 0, done.stderr
    assert "review-pr-41: skipped: a review task" in done.stdout
    tasks = sorted(str(p) for p in (tmp_path / "h").iterdir())
    loaded = subprocess.run(
        [str(python), "-c", LOAD_TASKS, *tasks], capture_output=True, text=True, timeout=120, check=False
    )
    assert loaded.returncode == 0, loaded.stderr[-2000:]
    found = json.loads(loaded.stdout)
    assert sorted(found) == sorted(IMPL_TASKS)  # every implementation task; the reviews are skipped
    assert all(t["network"] == "no-network" and t["workdir"] == "/app" for t in found.values())
    assert found[spec["tasks"][0]["id"]]["resources"] == [1.5, 1024, 2048]
    assert found["add-mode"]["resources"] == [None, None, None]
    assert (tmp_path / "h" / "fix-median" / "environment" / "workspace").is_dir()
    assert not (tmp_path / "h" / "fix-median" / "environment" / "workspace" / ".git").exists()


def test_an_import_asking_for_the_internet_is_refused_naming_the_key_and_writes_nothing(tmp_path):
    import shutil
    from pathlib import Path

    task = tmp_path / "csv-total"
    shutil.copytree(Path(__file__).resolve().parents[2] / "support" / "harbor_tasks" / "csv-total", task)
    with (task / "task.toml").open("a") as handle:
        handle.write("allow_internet = true\n")
    done = wfbench("tasks", "import", "harbor", str(task), "--out", str(tmp_path / "corpus"))
    assert done.returncode == 2
    assert "task.toml" in done.stderr
    assert "environment.allow_internet" in done.stderr
    assert "--network host" in done.stderr
    assert not (tmp_path / "corpus").exists()
