# Owner(s): ["module: PrivateUse1"]
"""Scaled dot product attention on OpenReg: ``F.scaled_dot_product_attention``
picks the overrideable backend (OpenReg's fused kernel, forward and backward)
when the kernel supports the call, and the math path otherwise (dropout,
grouped-query attention); both match the CPU.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import torch
import torch.nn.functional as F
import torch_openreg  # noqa: F401
from torch.nn.attention import SDPBackend
from torch.testing._internal.common_utils import TestCase, run_tests


class TestOpenRegSDPA(TestCase):
    def _compare(self, is_causal: bool, with_bias: bool) -> None:
        torch.manual_seed(0)
        q, k, v = (torch.randn(2, 3, 5, 4) for _ in range(3))
        bias = torch.randn(5, 5) if with_bias else None
        cpu_in = [t.clone().requires_grad_() for t in (q, k, v)]
        dev_in = [t.to("openreg").requires_grad_() for t in (q, k, v)]
        cpu_bias = bias.clone().requires_grad_() if with_bias else None
        dev_bias = bias.to("openreg").requires_grad_() if with_bias else None
        ref = F.scaled_dot_product_attention(*cpu_in, attn_mask=cpu_bias, is_causal=is_causal)
        out = F.scaled_dot_product_attention(*dev_in, attn_mask=dev_bias, is_causal=is_causal)
        self.assertEqual(type(out.grad_fn).__name__, "ScaledDotProductFusedAttentionOverrideableBackward0")
        self.assertEqual(out.cpu(), ref)
        ref.square().sum().backward()
        out.square().sum().backward()
        for d, c in zip(dev_in, cpu_in, strict=True):
            self.assertEqual(d.grad.cpu(), c.grad)
        if with_bias:
            self.assertEqual(dev_bias.grad.cpu(), cpu_bias.grad)

    def test_fused_choice_is_overrideable(self):
        q = torch.randn(1, 2, 3, 4, device="openreg")
        self.assertEqual(torch._fused_sdp_choice(q, q, q), 4)  # SDPBackend.overrideable
        # What the fused kernel does not implement goes to the math path.
        self.assertEqual(torch._fused_sdp_choice(q, q, q, dropout_p=0.5), 0)

    def test_sdpa_forward_and_backward(self):
        self._compare(is_causal=False, with_bias=False)

    def test_sdpa_causal(self):
        self._compare(is_causal=True, with_bias=False)

    def test_sdpa_with_float_bias(self):
        self._compare(is_causal=False, with_bias=True)

    def test_sdpa_with_bool_mask_in_half_precision(self):
        torch.manual_seed(0)
        q, k, v = (torch.randn(1, 2, 4, 8, dtype=torch.float16) for _ in range(3))
        mask = torch.rand(4, 4) > 0.3
        mask[:, 0] = True  # no fully masked row
        dev = [t.to("openreg") for t in (q, k, v)]
        self.assertEqual(torch._fused_sdp_choice(*dev, mask.to("openreg")), SDPBackend.OVERRIDEABLE.value)
        out = F.scaled_dot_product_attention(*dev, attn_mask=mask.to("openreg"))
        ref = F.scaled_dot_product_attention(*(t.float() for t in (q, k, v)), attn_mask=mask)
        self.assertEqual(out.dtype, torch.float16)
        self.assertEqual(out.cpu().float(), ref, atol=2e-3, rtol=2e-3)

    def test_unsupported_calls_take_the_math_path(self):
        torch.manual_seed(0)
        q = torch.randn(1, 4, 3, 8)
        kv = torch.randn(1, 2, 3, 8)  # grouped-query attention: 4 query heads, 2 kv heads
        dev = [t.to("openreg") for t in (q, kv, kv)]
        self.assertEqual(torch._fused_sdp_choice(*dev, enable_gqa=True), SDPBackend.MATH.value)
        out = F.scaled_dot_product_attention(*dev, enable_gqa=True)
        self.assertEqual(out.cpu(), F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True))
        dropped = F.scaled_dot_product_attention(*(t.to("openreg") for t in (q, q, q)), dropout_p=0.5)
        self.assertEqual(dropped.shape, q.shape)
        self.assertEqual(dropped.device.type, "openreg")


if __name__ == "__main__":
    run_tests()
