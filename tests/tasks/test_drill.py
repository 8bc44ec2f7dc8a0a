"""The entity drill (`Task.episode_drill`): each request under the drill's own instruction, and as the
target exactly the parameters its correct calls carry, written as a call writes them; no held-out
request, no target without anything to look up."""

from __future__ import annotations

import itertools
import json

from configs.task import TaskConfig
from tasks.base import load_task
from tasks.fund_assistant.compact import compact_solution
from tasks.fund_assistant.episodes import AGENT_SYSTEM, DRILL_SYSTEM, named_in


def _task(**options):
    return load_task(TaskConfig(options={"n_episodes": 200, **options}))


def test_drill_targets_are_the_parameters_of_the_correct_calls():
    task = _task()
    drill = task.episode_drill(300)
    assert 200 < len(drill) < 300  # requests whose calls take no parameters are left out
    assert DRILL_SYSTEM != AGENT_SYSTEM and all(m[0] == {"role": "system", "content": DRILL_SYSTEM}
                                                for m, _ in drill)
    objects = [json.loads(part) for _, t in drill for part in t.replace("} {", "}\n{").splitlines()]
    assert all(o and isinstance(o, dict) for o in objects)
    # a drilled object is byte for byte the params a call writes
    (messages, target), = drill[:1]
    first = json.loads(target.replace("} {", "}\n{").splitlines()[0])
    assert json.dumps(first, ensure_ascii=False) in compact_solution("t", first, [], 1)
    # the request names what the target copies (tickers and accounts appear verbatim)
    for messages, target in drill:
        for o in json.loads("[" + target.replace("} {", "}, {") + "]"):
            for key in ("ticker", "account", "from_account", "to_account"):
                if key in o:
                    assert o[key] in messages[1]["content"], (messages, target)


def test_the_drill_holds_no_held_out_request_and_is_its_own_stream():
    task = _task()
    held = {r["request"] for r in task.episode_rows()[1]}
    train = {r["request"] for r in task.episode_rows()[0]}
    drill = [m[1]["content"] for m, _ in task.episode_drill(2000)]
    assert not held & set(drill)
    assert len(set(drill) - train) > 0.9 * len(set(drill))  # not the training episodes again
    assert drill == [m[1]["content"] for m, _ in _task().episode_drill(2000)]  # reproducible


def test_the_drill_follows_the_episode_kinds():
    task = _task(episode_kinds=["market_order"])
    drill = task.episode_drill(100)
    assert drill and all(t.startswith('{"market": ') for _, t in drill)


def test_an_entity_is_named_only_as_a_request_writes_it():
    assert named_in("先看下余额，够的话取 5万元 到银行卡", "amount", 50000)
    assert (named_in("if it covers 50k, send it", "amount", 50000)
            and named_in("move $12,000", "amount", 12000))
    assert named_in("卖 500 股", "quantity", 500) and named_in("转 2 千 给", "amount", 2000)
    assert not named_in("取 5000 元", "amount", 500) and not named_in("取 500 元", "amount", 5000)
    assert not named_in("sell whatever is up over 15%", "ticker", "AMZN")
    assert named_in("sell it", "side", "sell")  # not an entity: follows from the meaning


def test_a_drill_without_rows_stops_the_set_up_with_its_name(tiny_tokenizer, monkeypatch):
    import pytest

    from actors.driver.workloads import workload_for
    from configs.loader import load_config

    cfg = load_config("tiny-cpu-agent")
    task = load_task(cfg.task)
    monkeypatch.setattr(task, "episode_drill", lambda n: [])
    with pytest.raises(ValueError,
                       match="train.warmup.drill: task 'fund_assistant' gave no drill rows out of 5000"):
        workload_for(cfg, task).warmup_examples(tiny_tokenizer, [])


def test_drill_rows_are_rendered_as_an_episode_prompt_and_learned_whole(tiny_tokenizer):
    from actors.driver.setup_steps import drill_examples
    from actors.worker.agent_loop import first_prompt_ids

    tok = tiny_tokenizer
    task = _task()
    (prompt, target, mask), = drill_examples(task, tok, 1)
    (messages, text), = task.episode_drill(1)
    assert (prompt == first_prompt_ids(tok, messages) and target[-1] == tok.eos_token_id
            and mask == [1] * len(target))
    assert tok.decode(target[:-1]) == text


def test_entity_swaps_are_the_tasks_groups_as_single_tokens(tiny_tokenizer, tmp_path):
    import pytest
    from transformers import AutoTokenizer

    from actors.driver.workloads import workload_for
    from configs.loader import load_config
    from models.tiny import train_tokenizer

    cfg = load_config("tiny-cpu-agent")  # the preset swaps entities
    task = load_task(cfg.task)
    work = workload_for(cfg, task)
    train_tokenizer(["user\nbuy 5 AAPL from ACC001"] * 20, 512, tmp_path,
                    task.vocabulary() + task.episode_vocabulary())
    tok = AutoTokenizer.from_pretrained(tmp_path)
    groups = work.entity_swaps(tok)
    assert [len(g) for g in groups] == [6, 4, 4, 999]  # tickers by market (US, CN, HK), then accounts
    assert tok.decode(groups[0]) == "AAPLAMZNTSLAMSFTNVDAGOOGL"
    assert tok.decode(groups[3][:2]) == "ACC001ACC002"
    # the single-turn tokenizer spells some entities in pieces: swapping them would cut them, so refused
    with pytest.raises(ValueError, match="swap_entities: '0700.HK' is not one token"):
        work.entity_swaps(tiny_tokenizer)
    off = load_config("tiny-cpu-agent", ["train.warmup.swap_entities=false"])
    assert workload_for(off, task).entity_swaps(tok) is None


def test_a_drill_gap_puts_a_run_of_the_filler_between_the_request_and_the_answer(tiny_tokenizer):
    from actors.driver.setup_steps import drill_examples

    tok, task = tiny_tokenizer, _task()
    filler = "one two three four five six seven eight"
    plain = drill_examples(task, tok, 60)
    gapped = drill_examples(task, tok, 60, filler, gap_words=5, seed=1)
    assert drill_examples(task, tok, 60, filler, gap_words=5, seed=1) == gapped  # drawn from the seed
    assert [g[1:] for g in gapped] == [p[1:] for p in plain]  # the same targets
    gaps = []
    for (p, _, _), (g, _, _) in zip(plain, gapped):
        text, base = tok.decode(g), tok.decode(p)
        end = base.rindex("<|im_end|>")
        assert text.startswith(base[:end]) and text.endswith(base[end:])  # inserted after the request
        words = text[end:len(text) - len(base) + end].split()
        assert len(words) <= 5 and " ".join(words) in filler
        gaps.append(len(words))
    assert min(gaps) == 0 and max(gaps) == 5 and len(set(gaps)) == 6  # every length up to the bound


def test_last_turns_keep_the_last_runs_of_the_mask():
    from actors.driver.setup_steps import last_turns

    assert last_turns([0, 1, 1, 0, 0, 1, 1, 1, 0]) == (5, 8)
    assert last_turns([1, 1, 0, 1]) == (3, 4) and last_turns([0, 0]) == (0, 0)
    assert last_turns([0, 1, 1, 0, 0, 1, 1, 1, 0], 2) == (1, 8)
    assert last_turns([1, 1, 0, 1], 3) == (0, 4)  # more turns than the mask has: all of it


def test_answer_drill_rows_learn_only_the_final_answer_which_names_the_outcome(tiny_tokenizer):
    from actors.driver.setup_steps import answer_examples, trajectory_examples
    from configs.loader import load_config
    from tasks.fund_assistant.episodes import stated as stated_by
    from tasks.fund_assistant.trajectories import _REFUSED

    cfg = load_config("tiny-cpu-agent")
    task, tok = _task(episode_kinds=cfg.task.options["episode_kinds"]), tiny_tokenizer
    rows = task.episode_drill_rows(60)
    assert rows and all(r["outcome"] for r in rows)  # each answer has something to copy
    held = {r["request"] for r in task.episode_rows()[1]}
    assert not held & {r["request"] for r in rows}
    examples = answer_examples(cfg, task, tok, 60)
    assert len(examples) == len(rows)
    played = trajectory_examples(cfg, task, tok, rows)
    for row, (prompt, ids, mask), (p, c, _) in zip(rows, examples, played, strict=True):
        assert prompt + ids == p + c and mask == [1] * len(ids)  # the trajectory, cut before its last turn
        learned = tok.decode(ids, skip_special_tokens=True)
        answer = json.loads(learned)["action"]
        assert answer["tool"] == "final_answer"
        said = answer["params"]["answer"]
        if said == _REFUSED[row["lang"]]:  # a flawed log's refused call: nothing moved
            continue
        # else it states the entity of the call before it, which the context holds: a lookup
        before = tok.decode(prompt)
        stated = [x for x in (*row["outcome"], *stated_by(row["guarded"]["params"])) if x in said]
        assert stated and all(x in before for x in stated), (row, said)


def test_answer_drill_rows_of_two_turns_learn_the_last_call_and_the_answer_not_the_reply(tiny_tokenizer):
    from actors.driver.setup_steps import answer_examples, trajectory_examples
    from configs.loader import load_config

    cfg = load_config("tiny-cpu-agent")
    task, tok = _task(episode_kinds=cfg.task.options["episode_kinds"]), tiny_tokenizer
    rows = task.episode_drill_rows(40)
    played = trajectory_examples(cfg, task, tok, rows)
    one, two = answer_examples(cfg, task, tok, 40), answer_examples(cfg, task, tok, 40, turns=2)
    for row, (p1, ids1, _), (p2, ids2, mask2), (p, c, _) in zip(rows, one, two, played, strict=True):
        assert p2 + ids2 == p + c and ids2[-len(ids1):] == ids1 and len(p2) < len(p1)
        # Two learned runs (the last call, then the answer) around the tool's reply, which is not learned.
        runs = [(k, len(list(g))) for k, g in itertools.groupby(mask2)]
        assert [k for k, _ in runs] == [1, 0, 1] and runs[-1][1] == len(ids1)
        call = json.loads(tok.decode(ids2[:runs[0][1]], skip_special_tokens=True))["action"]
        assert call["tool"] != "final_answer"
        # each entity is one the request names or a tool's reply before it said: a lookup in the context
        context = tok.decode(p2)
        assert all(named_in(context, k, v) for k, v in call["params"].items()), (row["request"], call)
