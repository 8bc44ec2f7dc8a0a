"""Harnesses for tests/actors/test_gateway.py: agents written against the `openai` client, as a user
writes them (`async def harness(client, row) -> float | dict`)."""

from __future__ import annotations

import asyncio
import json

import openai

TOOLS = [{"type": "function", "function": {"name": "check_balance", "description": "the account's balance",
                                           "parameters": {"type": "object", "properties": {}}}}]


async def two_turns(client: openai.AsyncOpenAI, row: dict) -> float:
    """Ask, then answer the model's turn with a tool result and ask again (whatever it said)."""
    messages = [{"role": "user", "content": row["question"]}]
    first = await client.chat.completions.create(model="policy", messages=messages, tools=TOOLS,
                                                 temperature=0.0, max_tokens=24)
    reply = first.choices[0].message
    messages.append({"role": "assistant", "content": reply.content or "",
                     "tool_calls": [{"id": "call_1", "type": "function",
                                     "function": {"name": "check_balance", "arguments": "{}"}}]})
    messages.append({"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"balance": 100})})
    await client.chat.completions.create(model="policy", messages=messages, tools=TOOLS, temperature=0.0,
                                         max_tokens=24)
    return 1.0


async def one_turn_or_fail(client: openai.AsyncOpenAI, row: dict) -> dict:
    if row["question"] == "raise":
        raise RuntimeError("the harness failed")
    if row["question"] == "hang":
        await asyncio.sleep(3600)
    out = await client.chat.completions.create(model="policy", max_tokens=8,
                                               messages=[{"role": "user", "content": row["question"]}])
    return {"reward": float(len(out.choices[0].message.content or "") > 0), "turns": 1.0}


async def refusals(client: openai.AsyncOpenAI, row: dict) -> dict:
    """What the gateway refuses (a status each), and what it serves besides chat."""
    ask = {"model": "policy", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}]}
    seen: dict[str, float] = {}
    wrong = openai.AsyncOpenAI(base_url=str(client.base_url), api_key="not-the-token", max_retries=0)
    try:
        await wrong.chat.completions.create(**ask)
    except openai.AuthenticationError as e:
        seen["unauthorized"] = float(e.status_code)
    finally:
        await wrong.close()
    try:
        await client.chat.completions.create(**ask, tools=TOOLS, tool_choice="required")
    except openai.BadRequestError as e:
        seen["required_tool"] = float(e.status_code)
    try:
        await client.chat.completions.create(**ask, stop=["\n"])
    except openai.BadRequestError as e:
        seen["stop_strings"] = float(e.status_code)
    models = await client.models.list()
    seen["models"] = float([m.id for m in models.data] == ["policy"])
    done = await client.completions.create(model="policy", prompt="<|im_start|>user\nhi", max_tokens=4)
    seen["completion"] = float(len(done.choices) == 1)
    return {"reward": 0.0, **seen}


async def agents_sdk(client: openai.AsyncOpenAI, row: dict) -> dict:
    """An OpenAI Agents SDK agent with a function tool, its model the gateway's (unchanged SDK code)."""
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool
    from agents.exceptions import MaxTurnsExceeded, ModelBehaviorError

    @function_tool
    def check_balance() -> str:
        """The account's balance."""
        return json.dumps({"balance": 100})

    agent = Agent(name="fund", instructions="Answer the user's question about their account.",
                  tools=[check_balance],
                  model=OpenAIChatCompletionsModel(model="policy", openai_client=client),
                  model_settings=ModelSettings(temperature=0.0, max_tokens=16))
    try:
        result = await Runner.run(agent, row["question"], max_turns=2)
        answered = float(isinstance(result.final_output, str))
    except (MaxTurnsExceeded, ModelBehaviorError):  # the tiny model's answer, not the gateway's doing
        answered = 0.0
    return {"reward": answered, "answered": answered}


async def hot_two_turns(client: openai.AsyncOpenAI, row: dict) -> dict:
    """Two calls asking for a hot temperature and many tokens (a run's sampling replaces both); the second
    call's 400 (past the session's call limit) ends the episode."""
    messages = [{"role": "user", "content": row["question"]}]
    calls = 0
    for _ in range(2):
        try:
            out = await client.chat.completions.create(model="policy", messages=messages, temperature=2.0,
                                                       max_tokens=400)
        except openai.BadRequestError:
            break
        calls += 1
        messages += [{"role": "assistant", "content": out.choices[0].message.content or ""},
                     {"role": "user", "content": "and then?"}]
    return {"reward": float(calls), "success": 0.0}


async def rewrites_history(client: openai.AsyncOpenAI, row: dict) -> float:
    """Two calls; before the second the agent rewrites its system message (the second prompt does not
    extend the first call's prompt and reply)."""
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": row["question"]}]
    out = await client.chat.completions.create(model="policy", messages=messages, max_tokens=8)
    messages[0] = {"role": "system", "content": "Be very brief."}
    messages += [{"role": "assistant", "content": out.choices[0].message.content or ""},
                 {"role": "user", "content": "again"}]
    await client.chat.completions.create(model="policy", messages=messages, max_tokens=8)
    return 1.0


async def jittery(client: openai.AsyncOpenAI, row: dict) -> float:
    """Three calls with a random pause before each (timing that differs in every run), a conversation that
    does not: each call appends the model's reply and a fixed follow-up."""
    import random

    messages = [{"role": "user", "content": row["question"]}]
    for _ in range(3):
        await asyncio.sleep(random.random() * 0.05)
        out = await client.chat.completions.create(model="policy", messages=messages, max_tokens=10)
        messages += [{"role": "assistant", "content": out.choices[0].message.content or ""},
                     {"role": "user", "content": "go on"}]
    return 1.0


async def always_fails(client: openai.AsyncOpenAI, row: dict) -> float:
    """A harness whose own code is broken: it raises before it ever calls the model."""
    raise KeyError("question")


async def two_at_once(client: openai.AsyncOpenAI, row: dict) -> dict:
    """Two calls at the same time, then one asking for two choices: during a run both are refused."""
    ask = {"model": "policy", "max_tokens": 4, "messages": [{"role": "user", "content": row["question"]}]}
    outs = await asyncio.gather(client.chat.completions.create(**ask), client.chat.completions.create(**ask),
                                return_exceptions=True)
    refused = sum(isinstance(o, openai.BadRequestError) for o in outs)
    try:
        await client.chat.completions.create(**ask, n=2)
        two = 0.0
    except openai.BadRequestError:
        two = 1.0
    return {"reward": 1.0, "refused_concurrent": float(refused), "refused_n2": two}


async def call_then_hang(client: openai.AsyncOpenAI, row: dict) -> float:
    """One call, then a second that is never waited for to its end (the harness is cut by its timeout)."""
    ask = {"model": "policy", "max_tokens": 4, "messages": [{"role": "user", "content": row["question"]}]}
    await client.chat.completions.create(**ask)
    await asyncio.sleep(3600)
    return 1.0


async def too_long(client: openai.AsyncOpenAI, row: dict) -> dict:
    """A conversation longer than the engine's context: refused with a 400, the session truncated."""
    words = " ".join(["word"] * 3000)
    try:
        await client.chat.completions.create(model="policy", max_tokens=4,
                                             messages=[{"role": "user", "content": words}])
    except openai.BadRequestError as e:
        return {"reward": 0.0, "status": float(e.status_code)}
    return {"reward": 1.0, "status": 200.0}
