"""One rule for a budget (issue 32): 1..200,000 tokens for build_context, recall and the
MCP tools; 0 is refused by the engine (it was refused by `ctx build` alone, silent in
recall, and MCP's minimum was 50)."""

from __future__ import annotations

import inspect
import typing

import pytest

from engine import LIMITS, InvalidBudget
from engine.facade import ContextEngine
from ipc import wire
from tests.agents.engines import ctx


@pytest.mark.parametrize("budget", [0, -1, LIMITS.max_budget + 1])
def test_the_engine_refuses_a_budget_outside_the_rule(engine: ContextEngine,
                                                      budget: int) -> None:
    with pytest.raises(InvalidBudget) as built:
        engine.build_context("ferry", budget=budget)
    with pytest.raises(InvalidBudget) as recalled:
        engine.recall("ferry", budget=budget)
    assert built.value.details["field"] == "build_context.budget"
    assert recalled.value.details["field"] == "recall.budget"
    assert f"{LIMITS.min_budget}..{LIMITS.max_budget}" in built.value.message


def test_a_budget_of_one_is_served(engine: ContextEngine) -> None:
    assert engine.build_context("ferry", budget=1).total_tokens <= 1


def test_the_wire_and_mcp_take_the_same_bounds() -> None:
    from ipc.mcp import server

    budget = wire.METHODS["recall"].params["budget"]
    assert (budget.lo, budget.hi) == (LIMITS.min_budget, LIMITS.max_budget)
    assert wire.METHODS["build_context"].params["budget"] == budget
    meta = typing.get_args(server.Budget)[1]
    bounds = {type(m).__name__: m for m in meta.metadata}
    assert (bounds["Ge"].ge, bounds["Le"].le) == (LIMITS.min_budget,
                                                    LIMITS.max_budget)
    assert inspect.signature(server.CtxTools.recall).parameters["budget"].annotation in (
        "Budget", server.Budget)


@pytest.mark.parametrize("command", [("build", "ferry"), ("recall", "ferry")])
def test_the_cli_says_so_for_build_and_recall_alike(command: tuple[str, ...]) -> None:
    done = ctx("--local", *command, "--budget", "0")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "[invalid_budget]" in done.stderr and "budget" in done.stderr
