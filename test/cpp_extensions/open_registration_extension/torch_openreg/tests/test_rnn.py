# Owner(s): ["module: PrivateUse1"]
"""Recurrent modules on OpenReg: on an accelerator device ATen runs each LSTM
and GRU step through the fused cell kernels (``_thnn_fused_lstm_cell``,
``_thnn_fused_gru_cell`` and their backwards), which OpenReg implements; the
CPU runs the unfused cells. Every configuration is compared with the CPU,
forward and backward.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import itertools

import torch
import torch.nn as nn
import torch_openreg  # noqa: F401
from torch.testing._internal.common_device_type import instantiate_device_type_tests
from torch.testing._internal.common_utils import TestCase, run_tests

INPUT, HIDDEN, SEQ, BATCH = 3, 4, 3, 2

# (num_layers, bidirectional, batch_first, bias, initial state given): each
# option is on in at least one configuration, off in another (every op of a
# step is a device kernel launch, so the file stays fast with few of them).
CONFIGS = [
    (1, False, False, True, False),
    (2, True, False, True, True),
    (1, False, True, False, True),
]


def _parameters_and_grads(module: nn.Module) -> list[torch.Tensor]:
    return [t.cpu() for p in module.parameters() for t in (p, p.grad)]


def _run(module: nn.RNNBase, x: torch.Tensor, h0) -> list[torch.Tensor]:
    """Output and final state(s), after a backward through all of them."""
    out, state = module(x, h0)
    results = [out, *(state if isinstance(state, tuple) else (state,))]
    sum(r.square().sum() for r in results).backward()
    return results


class TestOpenRegRNN(TestCase):
    def test_matches_cpu(self, device):
        for cls, (layers, bidirectional, batch_first, bias, with_state) in itertools.product(
            (nn.LSTM, nn.GRU), CONFIGS
        ):
            with self.subTest(cls=cls.__name__, layers=layers, bidirectional=bidirectional,
                              batch_first=batch_first, bias=bias, with_state=with_state):
                torch.manual_seed(0)
                kwargs = dict(bias=bias, batch_first=batch_first, bidirectional=bidirectional)
                cpu = cls(INPUT, HIDDEN, layers, **kwargs)
                dev = cls(INPUT, HIDDEN, layers, **kwargs).to(device)
                dev.load_state_dict(cpu.state_dict())
                x = torch.randn((BATCH, SEQ, INPUT) if batch_first else (SEQ, BATCH, INPUT))
                state_shape = (layers * (2 if bidirectional else 1), BATCH, HIDDEN)
                h0 = None
                if with_state:
                    h0 = tuple(torch.randn(state_shape) for _ in range(2 if cls is nn.LSTM else 1))
                xc = x.clone().requires_grad_()
                xd = x.to(device).requires_grad_()
                unpack = (lambda s: s) if cls is nn.LSTM else (lambda s: s[0])
                expected = _run(cpu, xc, None if h0 is None else unpack(h0))
                actual = _run(dev, xd, None if h0 is None else unpack(tuple(t.to(device) for t in h0)))
                for a, e in zip(actual, expected, strict=True):
                    self.assertEqual(a.device.type, torch.device(device).type)
                    self.assertEqual(a.cpu(), e)
                self.assertEqual(xd.grad.cpu(), xc.grad)
                self.assertEqual(_parameters_and_grads(dev), _parameters_and_grads(cpu))

    def test_packed_sequence(self, device):
        torch.manual_seed(0)
        cpu = nn.LSTM(INPUT, HIDDEN)
        dev = nn.LSTM(INPUT, HIDDEN).to(device)
        dev.load_state_dict(cpu.state_dict())
        sequences = [torch.randn(n, INPUT) for n in (5, 3, 1)]
        packed = nn.utils.rnn.pack_sequence(sequences)
        out_cpu, (h_cpu, _) = cpu(packed)
        out_dev, (h_dev, _) = dev(packed.to(device))
        self.assertEqual(out_dev.data.device.type, torch.device(device).type)
        self.assertEqual(out_dev.data.cpu(), out_cpu.data)
        self.assertEqual(h_dev.cpu(), h_cpu)

    def test_fused_cell_gradients_with_only_one_output_used(self, device):
        # Backward gets an undefined gradient for the output that is not used.
        torch.manual_seed(0)
        gates = [torch.randn(BATCH, 4 * HIDDEN) for _ in range(2)]
        cx = torch.randn(BATCH, HIDDEN)
        for used in (0, 1):
            with self.subTest(used=("hy", "cy")[used]):
                inputs = [t.to(device).requires_grad_() for t in (*gates, cx)]
                outputs = torch.ops.aten._thnn_fused_lstm_cell(*inputs)
                outputs[used].sum().backward()
                ref = [t.clone().requires_grad_() for t in (*gates, cx)]
                ig, hg, c = ref
                i, f, g, o = (ig + hg).chunk(4, 1)
                cy = i.sigmoid() * g.tanh() + f.sigmoid() * c
                hy = o.sigmoid() * cy.tanh()
                (hy, cy)[used].sum().backward()
                for t, r in zip(inputs, ref, strict=True):
                    self.assertEqual(t.grad.cpu(), r.grad)


# Every accelerator runs the fused cell; the CPU is the reference.
instantiate_device_type_tests(TestOpenRegRNN, globals(), except_for=("cpu",))


if __name__ == "__main__":
    run_tests()
