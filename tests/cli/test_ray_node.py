"""The node side of ``--executor ray`` without a cluster: how a task waits for its cell.

(cli/run/ray_node.py)
"""

from __future__ import annotations

import _thread
import threading
import time

import pytest

from wfbench.cli.run.ray_node import wait_for_cell


def _cell(box: dict[str, object], token: threading.Event, *, stop_after: float) -> threading.Thread:
    """A cell that runs until its token is set (or ``stop_after`` s), then takes 0.3 s to write its row."""

    def run() -> None:
        token.wait(stop_after)
        time.sleep(0.3)
        box["result"] = "cancelled row" if token.is_set() else "row"

    worker = threading.Thread(target=run)
    worker.start()
    return worker


def test_a_cooperative_cancel_sets_the_token_and_the_wait_lasts_until_the_cells_own_row(
    sigint_handled: None,
) -> None:
    """ray.cancel(force=False) is a KeyboardInterrupt in the task thread: the cell stops, its row is kept."""
    box: dict[str, object] = {}
    token = threading.Event()
    worker = _cell(box, token, stop_after=30.0)
    threading.Timer(0.2, _thread.interrupt_main).start()
    assert wait_for_cell(box, worker, token) is True
    assert token.is_set()
    assert box == {"result": "cancelled row"}


def test_a_second_interrupt_while_the_cell_winds_down_still_waits_for_its_row(sigint_handled: None) -> None:
    box: dict[str, object] = {}
    token = threading.Event()
    worker = _cell(box, token, stop_after=30.0)
    threading.Timer(0.1, _thread.interrupt_main).start()
    threading.Timer(0.25, _thread.interrupt_main).start()
    assert wait_for_cell(box, worker, token) is True
    assert box == {"result": "cancelled row"}


def test_without_an_interrupt_the_wait_returns_the_cells_row_and_false() -> None:
    box: dict[str, object] = {}
    token = threading.Event()
    worker = _cell(box, token, stop_after=0.1)
    assert wait_for_cell(box, worker, token) is False
    assert not token.is_set()
    assert box == {"result": "row"}


def test_a_cell_thread_that_ended_without_a_row_does_not_hang_the_task() -> None:
    box: dict[str, object] = {}
    worker = threading.Thread(target=lambda: None)
    worker.start()
    worker.join()
    assert wait_for_cell(box, worker, threading.Event()) is False
    assert box == {}


def test_a_nodes_endpoint_gives_each_cell_a_metered_lease_on_its_agents_routes(tmp_path) -> None:
    """On a node the cell's model traffic goes through this node's key proxy: a lease (bridge + token)."""
    from types import SimpleNamespace

    from wfbench.adapters.gateway.rules import OPENAI_RESPONSES_ROUTE
    from wfbench.cli.run.ray_node import _endpoint

    runtime = SimpleNamespace(
        script=b"default: {say: hi, usage: {input_tokens: 1, output_tokens: 1}}\n",
        base_url=None,
        agent="codex",
        arms=(),
        settings=SimpleNamespace(model="gpt-5.5"),
        budget_usd=None,
        ledger=None,
    )
    with _endpoint(runtime, str(tmp_path)) as endpoint:  # type: ignore[arg-type]
        assert endpoint.gateway is not None
        assert OPENAI_RESPONSES_ROUTE in endpoint.gateway.routes  # Codex's protocol is opened
        with endpoint.gateway.lease("cell", model="gpt-5.5") as lease:
            assert lease.bridge is not None
            assert lease.token != endpoint.api_key


def test_a_nodes_key_proxy_keeps_its_books_in_the_sweeps_shared_ledger(tmp_path) -> None:
    """With the driver's ledger handle shipped, the node's proxy keeps its books there, under the budget."""
    from types import SimpleNamespace

    pytest.importorskip("ray")
    from wfbench.adapters.executors.ray_ledger import ClusterLedger
    from wfbench.cli.run.ray_node import _endpoint

    runtime = SimpleNamespace(
        script=b"default: {say: hi, usage: {input_tokens: 1, output_tokens: 1}}\n",
        base_url=None,
        agent="standin",
        arms=(),
        settings=SimpleNamespace(model="claude-sonnet-4-5"),
        budget_usd=2.0,
        ledger=object(),  # the actor's handle; never called here
    )
    with _endpoint(runtime, str(tmp_path)) as endpoint:  # type: ignore[arg-type]
        assert isinstance(endpoint.gateway.ledger, ClusterLedger)
        assert endpoint.gateway.budget_usd == 2.0
