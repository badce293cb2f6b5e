"""REINFORCE (policy gradient with a running baseline and an entropy bonus) on a synthetic
contextual bandit, with ``torch.distributions``: a ``Categorical`` policy over arms
(``--policy categorical``) or an ``Independent(Normal)`` policy over a continuous action
(``--policy gaussian``), as an ordinary PyTorch script. The regret of the greedy policy must fall.

    python reinforce.py --device cpu --policy categorical
"""
import argparse

import torch
from torch import nn, optim
from torch.distributions import Categorical, Independent, Normal, kl_divergence

N_CONTEXT, N_ARMS, ACTION_DIM = 8, 4, 2


class Policy(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        out = N_ARMS if kind == "categorical" else ACTION_DIM
        self.body = nn.Sequential(nn.Linear(N_CONTEXT, 32), nn.Tanh(), nn.Linear(32, out))
        self.log_std = nn.Parameter(torch.full((ACTION_DIM,), -0.5))

    def forward(self, ctx):
        h = self.body(ctx)
        if self.kind == "categorical":
            return Categorical(logits=h)
        return Independent(Normal(h, self.log_std.exp().expand_as(h)), 1)


def main():
    parser = argparse.ArgumentParser(description="REINFORCE on a contextual bandit")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--policy", choices=("categorical", "gaussian"), default="categorical")
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    device = torch.device(args.device)

    # the environment: the best arm is the argmax of W ctx; the best continuous action is A ctx
    W = torch.randn(N_ARMS, N_CONTEXT, device=device)
    A = 0.5 * torch.randn(ACTION_DIM, N_CONTEXT, device=device)

    def reward(ctx, action):
        if args.policy == "categorical":
            return (action == (ctx @ W.T).argmax(-1)).float()
        return -((action - ctx @ A.T) ** 2).sum(-1)

    policy = Policy(args.policy).to(device)
    opt = optim.Adam(policy.parameters(), lr=2e-2)
    eval_ctx = torch.randn(512, N_CONTEXT, device=device)

    def regret():
        with torch.no_grad():
            dist = policy(eval_ctx)
            if args.policy == "categorical":
                greedy = dist.probs.argmax(-1)
                return 1.0 - reward(eval_ctx, greedy).mean().item()
            return -reward(eval_ctx, dist.mean).mean().item()

    first = regret()
    baseline = 0.0
    for step in range(args.steps):
        ctx = torch.randn(args.batch, N_CONTEXT, device=device)
        dist = policy(ctx)
        action = dist.sample()
        r = reward(ctx, action)
        baseline = 0.9 * baseline + 0.1 * r.mean().item()
        loss = -(dist.log_prob(action) * (r - baseline)).mean() - 0.01 * dist.entropy().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 50 == 0:
            print(f"step {step}: reward {r.mean().item():.4f} regret {regret():.4f}")
    last = regret()
    # the policy moved away from where it started: a positive KL between the first and last step's policy
    with torch.no_grad():
        moved = kl_divergence(policy(eval_ctx), Policy(args.policy).to(device)(eval_ctx)).mean().item()
    assert moved > 0, moved
    assert last < first, (first, last)
    print(f"loss fell: {first:.4f} -> {last:.4f}")


if __name__ == "__main__":
    main()
