import torch


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    variance = x.double().pow(2).mean(dim=-1, keepdim=True)
    return (x.double() * torch.rsqrt(variance + eps) * weight.double()).to(x.dtype)
