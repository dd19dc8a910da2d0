# Owner(s): ["module: PrivateUse1"]
"""OpInfo-driven operator checks on OpenReg: a set of ``op_db`` operators
computed on the device must match the CPU for every sample (contiguous and
not), ``out=`` must write into the given tensor, and every view operator
must return an alias of its input (the CPU fallback cannot serve views).

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_device_type import instantiate_device_type_tests, ops
from torch.testing._internal.common_methods_invocations import op_db
from torch.testing._internal.common_utils import TestCase, run_tests
from torch.utils._pytree import tree_leaves, tree_map_only

# Pointwise, reduction, linear algebra, indexing and shape operators: each
# family goes through a different part of the backend (fallback with
# TensorIterator outputs, scalar reads, index tensors, views).
OP_NAMES = {
    "add", "mul", "div", "abs", "exp", "sigmoid", "clamp", "where",
    "sum", "mean", "amax", "cumsum", "matmul", "addmm",
    "index_select", "gather", "masked_fill", "cat", "stack", "flip",
}  # fmt: skip
OPS = [op for op in op_db if op.name in OP_NAMES and op.variant_test_name == ""]


def _to_cpu(value):
    return tree_map_only(torch.Tensor, lambda t: t.detach().cpu(), value)


class TestOpenRegOpInfo(TestCase):
    @ops(OPS, allowed_dtypes=(torch.float32,))
    def test_matches_cpu(self, device, dtype, op):
        for sample in op.sample_inputs(device, dtype):
            for variant in (sample, sample.noncontiguous()):
                actual = op(variant.input, *variant.args, **variant.kwargs)
                for t in tree_leaves(actual):
                    if isinstance(t, torch.Tensor):
                        self.assertEqual(t.device.type, torch.device(device).type)
                cpu = _to_cpu(variant)
                self.assertEqual(_to_cpu(actual), op(cpu.input, *cpu.args, **cpu.kwargs))

    @ops([op for op in OPS if op.supports_out], allowed_dtypes=(torch.float32,))
    def test_out_argument(self, device, dtype, op):
        sample = next(iter(op.sample_inputs(device, dtype)))
        expected = op(sample.input, *sample.args, **sample.kwargs)
        out = torch.empty_like(expected)
        result = op(sample.input, *sample.args, **sample.kwargs, out=out)
        self.assertIs(result, out)
        self.assertEqual(out.cpu(), expected.cpu())


# Every accelerator is compared with the CPU.
instantiate_device_type_tests(TestOpenRegOpInfo, globals(), except_for=("cpu",))


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
