# Owner(s): ["module: PrivateUse1"]
"""The integration points beyond tensors and streams, as a backend author
uses them: initialization and fork safety, RNG state of every device and
generator offsets, custom operators under ``torch.ops.openreg``, backend
metadata through ``torch.save``/``torch.load``, the profiler, fused
attention through SDPA's overrideable backend, autocast, and view operators
(which the CPU fallback cannot serve).

Needs the built package on sys.path (``python -m torch_overlay.openreg``).
"""

import io
import multiprocessing
import os
import unittest

import torch
import torch.nn.functional as F
import torch_openreg  # noqa: F401
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import run_tests, TestCase
from torch.utils._pytree import tree_leaves, tree_map_only

DEADLINE_S = 60.0


def _use_openreg_in_child(queue: "multiprocessing.Queue[str]") -> None:
    try:
        torch.ones(1, device="openreg")
        queue.put("no error")
    except RuntimeError as e:
        queue.put(str(e))


class TestOpenRegInit(TestCase):
    def test_init_and_is_initialized(self):
        torch.openreg.init()
        self.assertTrue(torch.openreg.is_initialized())
        self.assertFalse(torch.openreg._is_in_bad_fork())

    @unittest.skipUnless(hasattr(os, "fork"), "needs fork()")
    def test_forked_child_gets_a_clear_error(self):
        torch.ones(1, device="openreg")  # initialized before the fork
        ctx = multiprocessing.get_context("fork")
        queue = ctx.Queue()
        child = ctx.Process(target=_use_openreg_in_child, args=(queue,))
        child.start()
        message = queue.get(timeout=DEADLINE_S)
        child.join(DEADLINE_S)
        self.assertEqual(child.exitcode, 0)
        self.assertIn("Cannot re-initialize OpenReg in forked subprocess", message)
        self.assertIn("'spawn' start method", message)


class TestOpenRegRandom(TestCase):
    def test_rng_state_of_all_devices(self):
        torch.manual_seed(1)
        states = torch.openreg.get_rng_state_all()
        self.assertEqual(len(states), torch.openreg.device_count())
        first = [torch.randn(4, device=f"openreg:{i}").cpu() for i in range(len(states))]
        torch.openreg.set_rng_state_all(states)
        again = [torch.randn(4, device=f"openreg:{i}").cpu() for i in range(len(states))]
        self.assertEqual(first, again, atol=0, rtol=0)
        with self.assertRaisesRegex(ValueError, "one per openreg device"):
            torch.openreg.set_rng_state_all(states[:1] * (len(states) + 1))

    def test_generator_offsets_are_exact(self):
        # A counter-based generator: (seed, offset) is the whole state and
        # every random kernel advances the offset by one step of 4.
        g = torch.Generator(device="openreg")
        g.manual_seed(42)
        self.assertEqual(g.get_offset(), 0)
        a = torch.rand(8, device="openreg", generator=g).cpu()
        b = torch.rand(8, device="openreg", generator=g).cpu()
        self.assertEqual(g.get_offset(), 8)
        g.set_offset(4)
        self.assertEqual(torch.rand(8, device="openreg", generator=g).cpu(), b, atol=0, rtol=0)
        g.set_offset(0)
        self.assertEqual(torch.rand(8, device="openreg", generator=g).cpu(), a, atol=0, rtol=0)
        state = g.get_state()
        self.assertEqual((state.dtype, state.numel()), (torch.uint8, 16))
        c = torch.rand(8, device="openreg", generator=g).cpu()
        g.set_state(state)
        self.assertEqual(torch.rand(8, device="openreg", generator=g).cpu(), c, atol=0, rtol=0)
        with self.assertRaisesRegex(RuntimeError, "multiples of 4"):
            g.set_offset(3)


class TestOpenRegCustomOps(TestCase):
    def test_custom_op_with_autograd(self):
        x = torch.tensor([[-1.5, 2.0], [0.5, -3.0]])
        xd = x.to("openreg").requires_grad_()
        y = torch.ops.openreg.custom_abs(xd)
        self.assertEqual(y.device.type, "openreg")
        self.assertEqual(y.cpu(), x.abs())
        (y * torch.arange(4.0).reshape(2, 2).to("openreg")).sum().backward()
        self.assertEqual(xd.grad.cpu(), x.sign() * torch.arange(4.0).reshape(2, 2))

    def test_custom_op_under_compile(self):
        # The Meta kernel lets Dynamo trace the op with fake tensors.
        torch._dynamo.reset()
        fn = torch.compile(lambda t: torch.ops.openreg.custom_abs(t) + 1, backend="aot_eager", fullgraph=True)
        x = torch.tensor([-2.0, 3.0], device="openreg")
        self.assertEqual(fn(x).cpu(), torch.tensor([3.0, 4.0]))

    def test_custom_op_with_aliasing_return(self):
        base = torch.arange(6.0).reshape(2, 3).to("openreg").requires_grad_()
        x = base * 1  # a non-leaf, so the view may be modified in place
        flat = torch.ops.openreg.custom_flat_view(x)
        self.assertTrue(flat._is_view())
        self.assertEqual(flat.untyped_storage().data_ptr(), x.untyped_storage().data_ptr())
        flat.mul_(2)  # writes through to x, autograd tracks it
        self.assertEqual(x.cpu(), torch.arange(6.0).reshape(2, 3) * 2)
        x.sum().backward()
        self.assertEqual(base.grad.cpu(), torch.full((2, 3), 2.0))


class TestOpenRegBackendMeta(TestCase):
    def test_save_and_load_round_trip_backend_meta(self):
        t = torch.arange(4.0, device="openreg")
        plain = torch.ones(2, device="openreg")
        torch.ops._openreg.set_private_format(t, True)
        buf = io.BytesIO()
        torch.save({"marked": t, "plain": plain}, buf)
        buf.seek(0)
        loaded = torch.load(buf)
        self.assertEqual(loaded["marked"].device.type, "openreg")
        self.assertEqual(loaded["marked"].cpu(), torch.arange(4.0))
        self.assertTrue(torch.ops._openreg.private_format(loaded["marked"]))
        self.assertIsNone(torch.ops._openreg.private_format(loaded["plain"]))


class TestOpenRegProfiler(TestCase):
    def test_autograd_profiler_records_device_time(self):
        x = torch.ones(64, device="openreg")
        with torch.autograd.profiler.profile(use_device="openreg") as prof:
            (x + 1).mul_(2)
        by_name = {e.key: e for e in prof.key_averages()}
        self.assertIn("aten::add", by_name)
        self.assertGreater(by_name["aten::add"].device_time_total, 0)
        self.assertIn("OPENREG", prof.key_averages().table(row_limit=3))


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
        for d, c in zip(dev_in, cpu_in):
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


class TestOpenRegAutocast(TestCase):
    def test_autocast_policies(self):
        a = torch.randn(4, 4, device="openreg")
        with torch.autocast("openreg", dtype=torch.bfloat16):
            self.assertEqual((a @ a).dtype, torch.bfloat16)
            self.assertEqual(torch.softmax(a, 0).dtype, torch.float32)
            self.assertEqual((a + a).dtype, torch.float32)  # not listed: unchanged
        self.assertEqual(torch.openreg.get_amp_supported_dtype(), [torch.float16, torch.bfloat16])


def _returns_alias(op) -> bool:
    """Whether the aten operator of an OpInfo is a view: its schema returns an alias of an input."""
    packet = getattr(torch.ops.aten, op.aten_name or op.name, None)
    overload = getattr(packet, "default", None)
    if overload is None:
        return False
    returns = overload._schema.returns
    return bool(returns) and all(
        r.alias_info is not None and not r.alias_info.is_write for r in returns
    )


VIEW_OPS = [op for op in op_db if _returns_alias(op)]


def _same_storage_on_cpu(t: torch.Tensor) -> bool:
    return t.is_contiguous() and t.storage_offset() == 0 and t.untyped_storage().nbytes() == t.nbytes


def _aliases(out, inp: torch.Tensor) -> bool:
    base = inp.untyped_storage().data_ptr()
    return all(t.untyped_storage().data_ptr() == base for t in tree_leaves(out))


class TestOpenRegViewOps(TestCase):
    # The CPU fallback refuses view operators (its result, a copy, would not alias the
    # input), so a view without a kernel of its own fails on the device, and with it every
    # composite built on it (repeat and tile use unfold, stft view_as_real).
    def test_view_ops_alias_their_input(self):
        self.assertGreater(len(VIEW_OPS), 0)
        for op in VIEW_OPS:
            dtype = torch.float32 if torch.float32 in op.dtypes else torch.complex64
            for sample in list(op.sample_inputs("openreg", dtype))[:2]:
                if not _same_storage_on_cpu(sample.input):
                    continue  # as_strided reads the storage, which a CPU copy does not keep
                with self.subTest(op=op.name, sample=repr(sample)[:120]):
                    out = op(sample.input, *sample.args, **sample.kwargs)
                    cpu = sample.transform(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t)
                    ref = op(cpu.input, *cpu.args, **cpu.kwargs)
                    self.assertEqual(tree_map_only(torch.Tensor, lambda t: t.cpu(), out), ref)
                    # Where the CPU kernel returns a view (reshape may copy), so does the device's.
                    self.assertEqual(_aliases(out, sample.input), _aliases(ref, cpu.input))


if __name__ == "__main__":
    run_tests()
