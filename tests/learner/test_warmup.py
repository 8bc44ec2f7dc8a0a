"""The SFT warm-up learns a multi-turn trajectory on its mask's 1s only: tokens the mask leaves out
(tool observations) are context, never targets."""

from __future__ import annotations

from safetensors.torch import load_file

from learner.warmup import Drill, encode_examples, sft_warmup


def _weights(tiny_paths, tmp_path, examples, name):
    out = tmp_path / name
    sft_warmup(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), examples, str(out), steps=2, lr=1e-2,
               batch_size=2, seed=0)
    return load_file(str(out / "model.safetensors"))


def test_masked_out_tokens_are_not_learned(tiny_paths, tiny_tokenizer, tmp_path):
    tok = tiny_tokenizer
    prompt = tok.encode("user\nsend 500 to ACC123")
    said = tok.encode('{"thought": "t"}') + [tok.eos_token_id]

    def example(tail: str):  # the policy's turn, then an observation the mask leaves out
        obs = tok.encode(tail)
        return prompt, said + obs, [1] * len(said) + [0] * len(obs)

    a = _weights(tiny_paths, tmp_path, [example("tool\nsent 500"), example("tool\nfailed")], "a")
    b = _weights(tiny_paths, tmp_path, [example("tool\naccount not found"), example("tool\nok then")], "b")
    assert all((a[k] == b[k]).all() for k in a)  # the observations changed nothing
    c = _weights(tiny_paths, tmp_path, [(p, x, [1] * len(m)) for p, x, m in
                                        (example("tool\nsent 500"), example("tool\nfailed"))], "c")
    assert any((a[k] != c[k]).any() for k in a)  # learned on, the same tokens do


def test_text_examples_are_learned_whole_and_token_examples_pass_through(tiny_tokenizer):
    tok = tiny_tokenizer
    (p, c, m), = encode_examples(tok, [("user\nhi", "ok")])
    assert (c[-1] == tok.eos_token_id and m == [1] * len(c)
            and p == tok("user\nhi", add_special_tokens=False)["input_ids"])
    token = ([1, 2], [3, 4, 5], [1, 0, 1])
    assert encode_examples(tok, [token]) == [token]


def test_the_drill_comes_first_and_joins_every_warm_up_batch(tiny_paths, tiny_tokenizer, tmp_path):
    tok = tiny_tokenizer
    examples = encode_examples(tok, [("user\nsend 500 to ACC123", '{"thought": "t"}')] * 2)
    drill = encode_examples(tok, [("system\nlist\nuser\nsell 5 AMZN", '{"ticker": "AMZN"}'),
                                  ("system\nlist\nuser\nsend 500", '{"amount": 500}')])

    def run(name, d):
        out = tmp_path / name
        stats = sft_warmup(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), examples, str(out),
                           steps=2,
                           lr=1e-2, batch_size=2, seed=0, drill=d)
        return stats, load_file(str(out / "model.safetensors"))

    plain, w0 = run("plain", None)
    idle, w1 = run("idle", Drill(drill, steps=0, mix=0))
    assert all((w0[k] == w1[k]).all() for k in w0) and "drill_steps" not in idle  # no drill: the same warm-up
    drilled, w2 = run("drilled", Drill(drill, steps=6, batch_size=2))
    assert drilled["drill_steps"] == 6 and drilled["drill_rows"] == 2
    assert drilled["drill_loss_last"] < drilled["drill_loss_first"]  # the drill's targets are learned
    assert drilled["warmup_loss_first"] != plain["warmup_loss_first"]  # and it came before the warm-up
    mixed, w3 = run("mixed", Drill(drill, steps=0, mix=1))
    assert mixed["warmup_loss_first"] != plain["warmup_loss_first"]  # mixed into the warm-up's batches
    assert any((w0[k] != w3[k]).any() for k in w0)


def test_the_warm_up_lr_decays_to_its_final_ratio_not_the_drills(tiny_paths, tiny_tokenizer, tmp_path):
    tok = tiny_tokenizer
    examples = encode_examples(tok, [("user\nsend 500 to ACC123", '{"thought": "t"}')] * 2)
    drill = Drill(encode_examples(tok, [("system\nlist\nuser\nsend 500", '{"amount": 500}')]), steps=2,
                  batch_size=1)

    def run(name, ratio):
        out = tmp_path / name
        stats = sft_warmup(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), examples, str(out),
                           steps=4, lr=1e-2, batch_size=2, seed=0, drill=drill, lr_final_ratio=ratio)
        return stats, load_file(str(out / "model.safetensors"))

    constant, w0 = run("constant", 1.0)
    decayed, w1 = run("decayed", 0.1)
    assert constant["warmup_lr_last"] == 1e-2
    assert 1e-3 < decayed["warmup_lr_last"] < 1e-2  # on its way down: the last step still moves
    assert decayed["drill_loss_last"] == constant["drill_loss_last"]  # the drill runs at the full lr
    assert decayed["warmup_loss_first"] == constant["warmup_loss_first"]  # the first step at the full lr too
    assert any((w0[k] != w1[k]).any() for k in w0)


def test_answer_rows_join_every_drill_and_warm_up_step(tiny_paths, tiny_tokenizer, tmp_path):
    tok = tiny_tokenizer
    examples = encode_examples(tok, [("user\nsend 500 to ACC123", '{"thought": "t"}')] * 2)
    drill = encode_examples(tok, [("system\nlist\nuser\nsend 500", '{"amount": 500}')])
    answers = encode_examples(tok, [("user\nsend 500\ntool\nsent 500", '{"answer": "done 500"}')])

    def run(name, d):
        out = tmp_path / name
        return sft_warmup(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), examples, str(out),
                          steps=2, lr=1e-2, batch_size=2, seed=0, drill=d)

    plain = run("plain", Drill(drill, steps=2, batch_size=1, mix=1))
    idle = run("idle", Drill(drill, steps=2, batch_size=1, mix=1, answers=answers, answers_per_step=0))
    assert idle == {**plain, "warmup_seconds": idle["warmup_seconds"]}  # none drawn: the same warm-up
    answered = run("answered", Drill(drill, steps=2, batch_size=1, mix=1, answers=answers,
                                     answers_per_step=1))
    assert answered["drill_answer_rows"] == 1
    assert answered["drill_loss_first"] != plain["drill_loss_first"]  # in the drill's first batch
    late = run("late", Drill(drill, steps=0, batch_size=1, mix=1, answers=answers, answers_per_step=1))
    assert late["warmup_loss_first"] != run("plain-late", Drill(drill, steps=0, batch_size=1, mix=1))[
        "warmup_loss_first"]  # and in the warm-up's


def test_a_watcher_sees_every_kth_step_and_leaves_the_warm_up_as_it_was(tiny_paths, tiny_tokenizer, tmp_path):
    from bench.warmup_curve import greedy_right

    examples = encode_examples(tiny_tokenizer, [("user\nsend 500 to ACC123", '{"thought": "t"}'),
                                                ("user\nsell 5 AMZN", '{"ticker": "AMZN"}')])
    seen = []

    def run(name, watch):
        out = tmp_path / name
        sft_warmup(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), examples, str(out), steps=5,
                   lr=1e-2, batch_size=2, seed=0, watch=watch)
        return load_file(str(out / "model.safetensors"))

    plain = run("plain", None)
    watched = run("watched", (2, lambda step, model: seen.append((step, model.training,
                                                                  greedy_right(model, examples)))))
    assert [s for s, *_ in seen] == [2, 4]  # after every 2nd step, not after the 5th
    assert all(training for _, training, _ in seen)  # measured in eval mode, handed back in train mode
    assert all((plain[k] == watched[k]).all() for k in plain)  # measuring changed no weight


def test_greedy_right_is_what_greedy_decoding_writes(tiny_paths, tiny_tokenizer, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from bench.warmup_curve import greedy_right

    tok = tiny_tokenizer
    rows = [("user\nsend 500 to ACC123", '{"thought": "t"}'), ("user\nsell 5 AMZN", '{"ticker": "AMZN"}')]
    out = tmp_path / "learned"
    sft_warmup(str(tiny_paths.model_dir), str(tiny_paths.tokenizer_dir), encode_examples(tok, rows[:1]),
               str(out), steps=40, lr=3e-3, batch_size=2, seed=0)  # the first row learned by heart
    model = AutoModelForCausalLM.from_pretrained(str(out), dtype=torch.float32)
    swapped = [(p, rows[1 - i][1]) for i, (p, _) in enumerate(rows)]  # each prompt with the other's target
    examples = encode_examples(tok, rows + swapped)
    right = greedy_right(model, examples)
    for (prompt, target, _), ok in zip(examples, right):
        written = model.generate(torch.tensor([prompt]), max_new_tokens=len(target), do_sample=False,
                                 eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
        assert ok == (written[0, len(prompt):].tolist() == target)
    assert right[0] and not right[2]  # a learned target is called right, another target for its prompt not
