"""A tiny DistributedDataParallel job: ``torchrun -m gangplane.demo.tiny_ddp [--steps N]``.

Each rank trains the same small regression model on its own shard of a synthetic dataset, with gradients
averaged over gloo (CPU). It prints its rank and the world size as torchrun set them, the loss as it falls,
and checks at the end that every rank holds identical weights, which is what DDP guarantees.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.distributed as dist
from torch import nn


def _shard(rank: int, world: int, samples: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(1234)
    x = torch.randn(samples, 16, generator=generator)
    true_w = torch.arange(16, dtype=torch.float32) / 16
    y = x @ true_w + 0.01 * torch.randn(samples, generator=generator)
    return x[rank::world], y[rank::world]


def _train(steps: int, rank: int, world: int) -> nn.Module:
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Linear(16, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = _shard(rank, world, 4096)
    for step in range(1, steps + 1):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x).squeeze(-1), y)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        if step == 1 or step % max(steps // 5, 1) == 0 or step == steps:
            print(f"rank {rank}/{world} step {step:3d} loss {loss.item():.5f}", flush=True)
    trained: nn.Module = model.module
    return trained


def _weights_agree(model: nn.Module, world: int) -> bool:
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    return all(torch.equal(gathered[0], g) for g in gathered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    node = os.environ.get("GROUP_RANK", os.environ.get("PET_NODE_RANK", "?"))
    print(f"rank {rank} of world size {world} on node {node} (local rank {os.environ.get('LOCAL_RANK')})")
    model = _train(args.steps, rank, world)
    agree = _weights_agree(model, world)
    print(f"rank {rank}: weights identical across {world} ranks: {agree}", flush=True)
    # Every rank must be past its last collective before any tears gloo down: a rank that destroys the group
    # while a peer still has the all_gather in flight can abort the peer (SIGABRT at exit).
    dist.barrier()
    dist.destroy_process_group()
    # Leave without running C++ static destructors: at interpreter exit gloo's transport can still own a
    # joinable thread, and destroying it calls std::terminate ("terminate called without an active
    # exception", SIGABRT) after the job's work is done, about one run in ten on a loaded machine.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0 if agree else 1)


if __name__ == "__main__":
    main()
