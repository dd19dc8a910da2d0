# Owner(s): ["module: PrivateUse1"]
"""torch.compile with a PrivateUse1 device, through OpenReg's minimal
passthrough backend ("openreg", torch_openreg/compiler.py) and the stock
backends that should (or should not) work with an out-of-tree device.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import copy
import logging

import torch
import torch._dynamo
import torch._dynamo.testing
import torch_openreg
from torch_openreg.compiler import openreg_backend, OpenRegCompileError
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import run_tests, TestCase


class CapturingBackend:
    """Runs the openreg backend and keeps every graph it was given."""

    def __init__(self):
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return openreg_backend(gm, example_inputs)


def placeholder_fakes(gm):
    return [
        n.meta["example_value"]
        for n in gm.graph.nodes
        if n.op == "placeholder" and isinstance(n.meta.get("example_value"), torch.Tensor)
    ]


class FreshDynamo:
    """Resets dynamo before and after every test, so code compiled by one test is
    never reused (or counted) by another."""

    def setUp(self):
        super().setUp()
        torch._dynamo.reset()

    def tearDown(self):
        torch._dynamo.reset()
        super().tearDown()


class TestOpenRegCompile(FreshDynamo, TestCase):
    def test_backend_registered_and_discoverable(self, device):
        self.assertIn("openreg", torch._dynamo.list_backends())
        self.assertIs(torch._dynamo.lookup_backend("openreg"), openreg_backend)

    def test_compile_and_execute(self, device):
        def fn(x, y):
            return (x.sin() * y + 1).relu().sum(dim=0)

        x = torch.randn(8, 5, device=device)
        y = torch.randn(8, 5, device=device)
        out = torch.compile(fn, backend="openreg")(x, y)
        self.assertEqual(out.device, x.device)
        self.assertEqual(out.cpu(), fn(x.cpu(), y.cpu()))

    def test_fake_tensor_device_propagation(self, device):
        backend = CapturingBackend()

        def fn(x, y):
            z = x @ y
            return z.cos(), z.to("cpu")

        # The last device, so a lost index (-> openreg:0) would show.
        index = torch.openreg.device_count() - 1
        x = torch.randn(4, 3, device=f"openreg:{index}")
        y = torch.randn(3, 2, device=f"openreg:{index}")
        out, out_cpu = torch.compile(fn, backend=backend, fullgraph=True)(x, y)
        (gm,) = backend.graphs
        fakes = placeholder_fakes(gm)
        self.assertEqual([f.device for f in fakes], [torch.device("openreg", index)] * 2)
        self.assertTrue(all(isinstance(f, torch._subclasses.FakeTensor) for f in fakes))
        devices = {
            n.target: n.meta["example_value"].device
            for n in gm.graph.nodes
            if n.op in ("call_function", "call_method") and isinstance(n.meta.get("example_value"), torch.Tensor)
        }
        self.assertEqual(devices["cos"], torch.device("openreg", index))
        self.assertEqual(devices["to"], torch.device("cpu"))
        self.assertEqual(out.device, torch.device("openreg", index))
        self.assertEqual(out_cpu.device, torch.device("cpu"))

    def test_backend_rejects_wrong_device_metadata(self, device):
        gm = torch.fx.symbolic_trace(lambda x: x + 1)
        (ph,) = [n for n in gm.graph.nodes if n.op == "placeholder"]
        real = torch.ones(2, device=device)
        with torch._subclasses.FakeTensorMode() as mode:
            ph.meta["val"] = mode.from_tensor(torch.ones(2))  # claims cpu
        with self.assertRaisesRegex(OpenRegCompileError, r"FakeTensor device cpu does not match.*openreg:0"):
            openreg_backend(gm, [real])
        del ph.meta["val"]
        with self.assertRaisesRegex(OpenRegCompileError, "no FakeTensor metadata"):
            openreg_backend(gm, [real])
        # Correct metadata passes and the result still runs.
        with torch._subclasses.FakeTensorMode() as mode:
            ph.meta["val"] = mode.from_tensor(real)
        self.assertEqual(ph.meta["val"].device, real.device)
        self.assertEqual(openreg_backend(gm, [real])(real).cpu(), torch.full((2,), 2.0))

    def test_dead_code_eliminated_and_logged(self, device):
        backend = CapturingBackend()

        def fn(x):
            unused = x * 100  # noqa: F841
            return x + 1

        with self.assertLogs("torch_openreg.compiler", level=logging.DEBUG) as logs:
            out = torch.compile(fn, backend=backend)(torch.ones(3, device=device))
        self.assertEqual(out.cpu(), torch.full((3,), 2.0))
        targets = [n.target for n in backend.graphs[0].graph.nodes if n.op == "call_function"]
        self.assertNotIn(torch.ops.aten.mul.Tensor, targets)
        self.assertEqual(len(targets), 1)
        self.assertIn("1 openreg input(s)", logs.output[0])
        self.assertIn("def forward", logs.output[0])

    def test_guard_caching_and_shape_recompile(self, device):
        cnt = torch._dynamo.testing.CompileCounterWithBackend("openreg")
        fn = torch.compile(lambda x: x * 2 - 1, backend=cnt, dynamic=False)
        fn(torch.randn(4, device=device))
        fn(torch.randn(4, device=device))
        self.assertEqual(cnt.frame_count, 1)  # same shape/device: guards hit
        out = fn(torch.ones(6, device=device))
        self.assertEqual(cnt.frame_count, 2)  # new shape: recompiled
        self.assertEqual(out.cpu(), torch.ones(6))
        fn(torch.ones(6))  # same shape, other device: device guard fails too
        self.assertEqual(cnt.frame_count, 3)

    def test_autograd_through_compile(self, device):
        def fn(x, w):
            return (x @ w).tanh().sum()

        x = torch.randn(5, 4)
        w = torch.randn(4, 3)
        xd = x.to(device).requires_grad_()
        wd = w.to(device).requires_grad_()
        torch.compile(fn, backend="openreg")(xd, wd).backward()
        xc = x.clone().requires_grad_()
        wc = w.clone().requires_grad_()
        fn(xc, wc).backward()
        self.assertEqual(wd.grad.device, wd.device)
        self.assertEqual(xd.grad.cpu(), xc.grad)
        self.assertEqual(wd.grad.cpu(), wc.grad)

    def test_nn_module_with_openreg_parameters(self, device):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(6, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).to(device)
        backend = CapturingBackend()
        compiled = torch.compile(model, backend=backend)
        x = torch.randn(3, 6, device=device)
        out = compiled(x)
        self.assertEqual(out.device, x.device)
        self.assertEqual(out, model(x))
        # Parameters are lifted to graph inputs, each with openreg metadata.
        fakes = placeholder_fakes(backend.graphs[0])
        self.assertEqual(len(fakes), 5)
        self.assertTrue(all(f.device.type == "openreg" for f in fakes))
        out.sum().backward()
        self.assertEqual(model[0].weight.grad.device, x.device)

    def test_dynamic_shapes(self, device):
        cnt = torch._dynamo.testing.CompileCounterWithBackend("openreg")
        fn = torch.compile(lambda x: (x * x).sum(0), backend=cnt, dynamic=True)
        for n in (3, 5, 9):
            x = torch.randn(n, 2, device=device)
            self.assertEqual(fn(x).cpu(), (x.cpu() * x.cpu()).sum(0))
        self.assertEqual(cnt.frame_count, 1)
        gm = cnt.graphs[0]
        sym_inputs = [
            n for n in gm.graph.nodes if n.op == "placeholder" and isinstance(n.meta.get("example_value"), torch.SymInt)
        ]
        self.assertGreaterEqual(len(sym_inputs), 1)

    def test_device_transfers_and_graph_breaks(self, device):
        def transfers(x):
            return x.sin().to("cpu").cos().to(device)

        explained = torch._dynamo.explain(transfers)(torch.randn(4, device=device))
        self.assertEqual(explained.graph_count, 1)  # transfers are traced, not broken on
        self.assertEqual(explained.graph_break_count, 0)

        def reads_value(x):
            return x.sin() * x.sum().item()  # host read of device data

        explained = torch._dynamo.explain(reads_value)(torch.randn(4, device=device))
        self.assertEqual(explained.graph_break_count, 1)
        self.assertIn("Tensor.item()", explained.break_reasons[0].reason)
        cnt = torch._dynamo.testing.CompileCounterWithBackend("openreg")
        x = torch.randn(4, device=device)
        self.assertEqual(torch.compile(reads_value, backend=cnt)(x), reads_value(x))
        self.assertEqual(cnt.frame_count, 2)

    def test_autocast(self, device):
        def fn(a, b):
            with torch.autocast(device_type="openreg", dtype=torch.bfloat16):
                c = a @ b
                return c, c.float().softmax(-1)

        a = torch.randn(4, 8, device=device)
        b = torch.randn(8, 3, device=device)
        c, s = torch.compile(fn, backend="openreg")(a, b)
        c_eager, s_eager = fn(a, b)
        self.assertEqual(c.dtype, torch.bfloat16)
        self.assertEqual(s.dtype, torch.float32)
        self.assertEqual(c.device, a.device)
        self.assertEqual(c, c_eager)
        self.assertEqual(s, s_eager)
        with self.assertRaisesRegex(AssertionError, "get_amp_supported_dtype"):
            # Sanity: the generic check autocast applies to custom backends.
            saved = torch.openreg.get_amp_supported_dtype
            try:
                del torch.openreg.get_amp_supported_dtype
                torch.autocast(device_type="openreg")
            finally:
                torch.openreg.get_amp_supported_dtype = saved

    def test_default_device(self, device):
        def fn(x):
            return x + torch.ones(x.shape[0])  # factory follows the default device

        torch.set_default_device(device)
        try:
            x = torch.arange(4.0)
            self.assertEqual(x.device.type, "openreg")
            out = torch.compile(fn, backend="openreg")(x)
        finally:
            torch.set_default_device(None)
        self.assertEqual(out.device.type, "openreg")
        self.assertEqual(out.cpu(), torch.arange(4.0) + 1)
        self.assertEqual(torch.ones(1).device, torch.device("cpu"))

    def test_aot_eager_backend(self, device):
        def fn(x, w):
            return (x @ w).relu().sum()

        x = torch.randn(3, 4, device=device)
        w = torch.randn(4, 2, device=device, requires_grad=True)
        out = torch.compile(fn, backend="aot_eager")(x, w)
        out.backward()
        self.assertEqual(out.device, x.device)
        wc = w.detach().cpu().requires_grad_()
        fn(x.cpu(), wc).backward()
        self.assertEqual(w.grad.cpu(), wc.grad)

    def test_dynamo_device_interface(self, device):
        from torch._dynamo.device_interface import get_interface_for_device

        interface = get_interface_for_device("openreg")
        self.assertEqual(interface.device_count(), torch.openreg.device_count())
        self.assertEqual(interface.current_stream(), torch.openreg.current_stream())
        self.assertEqual(interface.get_device_properties(device).type, "openreg")
        self.assertIs(interface.Event, torch.openreg.Event)
        interface.synchronize()


class TestOpenRegInductor(FreshDynamo, TestCase):
    """backend="inductor": Inductor's C++ code generator compiles the kernels,
    which run on openreg memory after the current stream caught up."""

    def test_forward_and_backward_with_dynamic_shapes(self, device):
        # One small model keeps the number of C++ kernels (each a g++ run) low.
        torch.manual_seed(0)
        ref = torch.nn.Sequential(torch.nn.Linear(6, 3), torch.nn.Tanh())
        model = copy.deepcopy(ref).to(device)
        counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
        compiled = torch.compile(model, backend=counter, dynamic=True)
        for n in (5, 7, 9):
            x = torch.randn(n, 6)
            # The upload is queued on the current stream: the compiled
            # kernels must wait for it rather than read the memory early.
            x_dev = torch.empty(n, 6, device=device).copy_(x)
            out = compiled(x_dev)
            (out.sum(0) * out.sum(0)).sum().backward()  # a reduction too
            expected = ref(x)
            (expected.sum(0) * expected.sum(0)).sum().backward()
            self.assertEqual(out.device.type, "openreg")
            self.assertEqual(out.cpu(), expected)
            for p, q in zip(model.parameters(), ref.parameters()):
                self.assertEqual(p.grad.device, p.device)
                self.assertEqual(p.grad.cpu(), q.grad, atol=1e-5, rtol=1e-4)
            model.zero_grad()
            ref.zero_grad()
        self.assertEqual(counter.frame_count, 1)  # one dynamic graph for all sizes

    def test_masked_loads(self, device):
        # Padding reads its input through a masked load: on 2.9.1 Inductor
        # mistook openreg's C++ kernels for Triton ones there.
        fn = torch.compile(lambda t: torch.nn.functional.pad(t, (1, 2)) * 2, backend="inductor")
        x = torch.arange(6.0).reshape(2, 3)
        self.assertEqual(fn(x.to(device)).cpu(), torch.nn.functional.pad(x, (1, 2)) * 2)

    def test_cpp_wrapper_refused_clearly(self, device):
        fn = torch.compile(lambda t: t + 1, backend="inductor")
        with torch._inductor.config.patch(cpp_wrapper=True):
            with self.assertRaisesRegex(Exception, "cpp_wrapper=True is not supported on openreg"):
                fn(torch.ones(3, device=device))


# Not only_for="openreg": on 2.9.1 that matches only in the first call per
# process (PrivateUse1TestBase.setUpClass renames the shared base's
# device_type, see the README), so exclude the other devices instead.
instantiate_device_type_tests(TestOpenRegCompile, globals(), except_for=("cpu", "cuda"))
instantiate_device_type_tests(TestOpenRegInductor, globals(), except_for=("cpu", "cuda"))


if __name__ == "__main__":
    run_tests()
