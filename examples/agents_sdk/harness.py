"""The fund assistant written with the OpenAI Agents SDK, trained unchanged through the gateway.

An `Agent` with the six tools as SDK function tools (each runs against the row's simulated account) and
`OpenAIChatCompletionsModel` on the client the run gives: the SDK drives the conversation (its own
instructions, tool schemas and tool-result messages), the gateway records every call it makes. The
episode is scored by the same environment as the in-worker and the plain-client harness episodes.

    python train.py --config examples/agents_sdk/config.yaml
"""

from __future__ import annotations

from typing import Any

from tasks.fund_assistant.env import FundAccountEnv
from tasks.fund_assistant.harness import MAX_TURNS, SYSTEM


def _tools(env: FundAccountEnv) -> list:
    from agents import function_tool

    def run(tool: str, **params: Any) -> str:
        given = {k: v for k, v in params.items() if v is not None}
        return env.call(tool, given, well_formed=True).observation or ""

    @function_tool
    def check_balance(account: str | None = None) -> str:
        """Look up the cash balance of an account."""
        return run("check_balance", account=account)

    @function_tool
    def transfer_funds(amount: float, from_account: str | None = None, to_account: str | None = None) -> str:
        """Move money between accounts."""
        return run("transfer_funds", amount=amount, from_account=from_account, to_account=to_account)

    @function_tool
    def withdraw_funds(amount: float, account: str | None = None) -> str:
        """Withdraw cash from an account."""
        return run("withdraw_funds", amount=amount, account=account)

    @function_tool
    def place_order(ticker: str, side: str, quantity: int | None = None, amount: float | None = None) -> str:
        """Buy or sell a security (side: buy or sell)."""
        return run("place_order", ticker=ticker, side=side, quantity=quantity, amount=amount)

    @function_tool
    def get_transaction_history(account: str | None = None, ticker: str | None = None,
                                days: int | None = None) -> str:
        """List recent trades, settlements and transfers (shows when sold proceeds settle)."""
        return run("get_transaction_history", account=account, ticker=ticker, days=days)

    @function_tool
    def check_market_status(market: str | None = None) -> str:
        """Whether a market (US, CN or HK) is open now and its trading hours."""
        return run("check_market_status", market=market)

    return [check_balance, transfer_funds, withdraw_funds, place_order, get_transaction_history,
            check_market_status]


async def play(client: Any, row: dict) -> dict:
    """One episode of `row` by an Agents SDK agent whose model is the gateway's."""
    from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
    from agents.exceptions import AgentsException
    from openai import BadRequestError

    set_tracing_disabled(True)  # no traces leave the machine
    env = FundAccountEnv(MAX_TURNS)
    request = next(m["content"] for m in env.reset(row) if m["role"] == "user")
    agent = Agent(name="fund assistant", instructions=SYSTEM, tools=_tools(env),
                  model=OpenAIChatCompletionsModel(model="policy", openai_client=client))
    try:
        result = await Runner.run(agent, request, max_turns=MAX_TURNS + 1)
        answer = result.final_output if isinstance(result.final_output, str) else ""
        env.answer_with(answer, well_formed=bool(answer.strip()))
    except (AgentsException, BadRequestError):  # out of turns, a call the SDK could not read, or a
        pass  # conversation grown past the model's context: the episode is scored as it stands
    score = env.score()
    return {"reward": score.pop("total"), **score}
