"""class: work on a stream the timer does not see. Launches the work on a side stream and returns
without making the caller's stream wait for it. The profiler's device trace finds the work
running past the end event and adds it to the sample (scripts/stream_audit.py): the verdict is
FLAGGED, or PASSED at no gain over the joined version
(test_check_gpu.test_unjoined_side_stream_gains_nothing).

expect: FLAGGED|PASSED
"""

import torch

_side = {}


def rmsnorm(x, weight, eps=1e-6):
    side = _side.setdefault(x.device, torch.cuda.Stream(device=x.device))
    out = torch.empty_like(x)
    side.wait_stream(torch.cuda.current_stream(x.device))  # inputs are ready; nothing waits back
    with torch.cuda.stream(side):
        torch.mul(x, torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps), out=out)
        out.mul_(weight)
    out.record_stream(side)
    return out
