import torch


def residual_norm(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor
) -> torch.Tensor:
    """Residual add, LayerNorm written out op by op, then SiLU: eager makes a full pass over the
    rows (and a fresh temporary) for every line; a compiler fuses them into about two."""
    h = x + residual
    mean = h.mean(dim=-1, keepdim=True)
    centred = h - mean
    var = (centred * centred).mean(dim=-1, keepdim=True)
    y = centred * torch.rsqrt(var + 1e-5) * weight + bias
    return y * torch.sigmoid(y)
