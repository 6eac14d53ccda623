"""Which node an instance goes to (pure bookkeeping)."""

from __future__ import annotations

from orchestrator.run.placement import Placement


def test_an_instance_goes_where_its_environment_is_while_that_node_has_a_free_slot():
    placement = Placement()
    placement.set_nodes({"a": 2, "b": 2})
    placement.holds("b", ["sympy/sympy@1.1"])
    assert placement.choose("sympy/sympy@1.1") == "b"
    assert placement.choose("sympy/sympy@1.1") == "b"
    assert placement.choose("sympy/sympy@1.1") == "a"  # b is full: another node builds it
    placement.release("b")
    assert placement.choose("sympy/sympy@1.1") == "b"


def test_without_a_holder_the_node_with_most_free_slots_then_the_smaller_id():
    placement = Placement()
    placement.set_nodes({"b": 1, "a": 1, "c": 3})
    assert [placement.choose("x@1") for _ in range(5)] == ["c", "c", "a", "b", "c"]
    assert placement.choose("x@1") is None  # every slot taken: the cluster queues it


def test_a_dead_node_drops_out_and_nodes_without_slots_never_count():
    placement = Placement()
    placement.set_nodes({"a": 1, "b": 1, "head": 0})
    placement.holds("a", ["r@1"])
    placement.set_nodes({"b": 1, "head": 0})  # a died
    assert placement.choose("r@1") == "b"
    assert placement.choose("r@1") is None
    assert "head" not in placement.slots


def test_the_dead_node_is_read_from_rays_node_died_message():
    from ray.exceptions import NodeDiedError

    from orchestrator.run.ray_runner import dead_node_of

    node = "5118996d387a4d1eae02506349a69380cbf67008c57566c294837912"
    died = NodeDiedError(
        "Task failed because the node it was running on is dead or unavailable. Node IP: "
        f"127.0.0.1, node ID: {node}. This can happen if the node was preempted, had a "
        "hardware failure, or its raylet crashed unexpectedly."
    )  # Ray 2.60's message, as a run on a cluster logged it
    assert dead_node_of(died) == node
    assert dead_node_of(RuntimeError("worker crashed")) is None
