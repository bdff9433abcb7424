"""A tiny model learns a handful of examples by heart."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from hiersum.decoding.generation import GenerationOptions, generate
from tests.helpers.model import EOS, PAD, make_batch, make_model


def test_tiny_model_overfits_and_greedy_decodes_a_target(device):
    model = make_model(seed=1, d_model=32, encoder_layers=2, inter_layers=[1], decoder_layers=1, device=device)
    src, mask, _ = make_batch(seed=3, device=device)
    generator = torch.Generator().manual_seed(4)
    target = torch.randint(7, 64, (src.size(0), 6), generator=generator)  # (B, S) summary tokens
    target[:, -1] = EOS
    target[2, 3:] = torch.tensor([EOS, PAD, PAD])
    target = target.to(device)
    tgt_in = F.pad(target[:, :-1], (1, 0), value=4)  # BOS + target[:-1]
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    losses = []
    for _ in range(150):
        log_probs = model(src, mask, tgt_in).log_probs  # (B, S, V)
        loss = F.nll_loss(log_probs.transpose(1, 2), target, ignore_index=PAD)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0], (losses[0], losses[-1])
    model.eval()
    out = generate(model, src, mask, GenerationOptions.official(beam_size=1, max_length=10))
    assert out.sequences[0] == target[0].tolist()
    assert out.sequences[2] == target[2, :4].tolist()
