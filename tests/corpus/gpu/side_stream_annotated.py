"""class: work on a stream the timer does not see / hidden from the device trace. As
side_stream_unjoined, but the side stream's work is launched inside a profiler annotation of
the candidate's own, named like the harness's ("call 99999", a sample with no marker), so
that a trace reader attributing launches to the innermost window would leave the work out of
the call. The audit counts only outermost windows: the verdict is FLAGGED, or PASSED at no
gain over the joined version (test_check_gpu.test_unjoined_side_stream_gains_nothing).

expect: FLAGGED|PASSED
"""

import torch

_side = {}


def rmsnorm(x, weight, eps=1e-6):
    side = _side.setdefault(x.device, torch.cuda.Stream(device=x.device))
    out = torch.empty_like(x)
    side.wait_stream(torch.cuda.current_stream(x.device))  # inputs are ready; nothing waits back
    with torch.profiler.record_function("call 99999"), torch.cuda.stream(side):
        torch.mul(x, torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps), out=out)
        out.mul_(weight)
    out.record_stream(side)
    return out
