"""Per-step bookkeeping: rank metrics merge, reward-part means, eval table, grouping."""

from __future__ import annotations

import json

import pytest
import torch

from actors import batching
from actors.types import Completion


def _sol(tool):
    return json.dumps({"thought": "x", "action": {"tool": tool, "params": {}}, "plan": [tool]})


def test_merge_rank_metrics():
    merged = batching.merge_rank_metrics([
        {"loss": 0.25, "learned_sequences": 3.0, "entropy": 1.0, "logprob_gap_max": 1e-7, "grad_norm": 2.0},
        {"loss": 0.5, "learned_sequences": 5.0, "entropy": 3.0, "logprob_gap_max": 4e-7, "grad_norm": 2.0},
    ])
    assert merged == {"loss": 0.75, "learned_sequences": 8.0, "entropy": 2.0, "logprob_gap_max": 4e-7,
                      "grad_norm": 2.0}


def test_breakdown_means_and_eval_table():
    rows = [{"solution": _sol("check_balance"), "category": "balance"},
            {"solution": _sol("transfer_funds"), "category": "combo"}]
    texts = [_sol("check_balance"), _sol("check_balance")]
    bds = [{"total": 1.0, "reasoning": 0.3}, {"total": 0.4, "reasoning": 0.15}]
    t = batching.eval_table(rows, texts, bds)
    assert t["tool_accuracy"] == 0.5 and t["average_score"] == pytest.approx(0.7)
    assert t["per_category"] == {"balance": 1.0, "combo": 0.0}
    assert t["reasoning_score"] == pytest.approx(0.75)
    assert batching.breakdown_means(bds) == {"reward_part/reasoning": pytest.approx(0.225),
                                             "reward_part/total": pytest.approx(0.7)}
    table = batching.format_eval_tables({"before": t, "after": t})
    assert "| combo | 0.0% | 0.0% |" in table and "| tool accuracy | 50.0% | 50.0% |" in table


def test_train_batch_flattens_groups_in_order():
    groups = [[Completion([1], [-0.1], "a", "stop", 0), Completion([2, 3], [-0.2, -0.3], "b", "stop", 0)],
              [Completion([4], [-0.4], "c", "length", 0), Completion([5], [-0.5], "d", "stop", 0)]]
    adv = torch.tensor([[1.0, -1.0], [0.5, -0.5]])
    b = batching.build_train_batch([[9], [8, 8]], groups, adv, version=3)
    assert b.prompt_ids == [[9], [9], [8, 8], [8, 8]]
    assert b.completion_ids == [[1], [2, 3], [4], [5]] and b.advantages == [1.0, -1.0, 0.5, -0.5]
    assert b.rollout_logprobs[1] == [-0.2, -0.3] and b.policy_version == 3
