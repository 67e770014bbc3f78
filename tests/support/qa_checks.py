"""Checks shared by the QA option-scoring tests (toy VLM and the effnet composite)."""

from __future__ import annotations

import pytest
import torch


def assert_option_scores_are_summed_losses(model, samples, scores, collate_one, abs_tol: float) -> None:
    """Each option's score equals minus the training loss of that option as the target, times its
    target tokens (the loss is their mean): scoring reads the same log-likelihoods training does."""
    for sample, row in zip(samples, scores, strict=True):
        for k, option in enumerate(sample["options"]):
            batch = collate_one([{**sample, "target": option}])
            with torch.no_grad():
                loss = model._loss(batch)
            n_tokens = int((batch["labels"] != -100).sum())
            assert float(row[k]) == pytest.approx(-float(loss) * n_tokens, rel=1e-4, abs=abs_tol)
