# Owner(s): ["module: PrivateUse1"]
"""Random numbers on OpenReg: per-device default generators and explicit
ones, whose whole state is (seed, offset) so states and offsets are exact,
the ``torch.openreg`` RNG functions, and readable errors for a generator or a
state that belongs to another device.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import TestCase, run_tests

STEP = 4  # offset units every random kernel consumes


def _draw(**kwargs) -> torch.Tensor:
    return torch.rand(8, device=kwargs.pop("device", "openreg"), **kwargs).cpu()


class TestOpenRegGenerators(TestCase):
    def test_generator_devices(self):
        for index in range(torch.openreg.device_count()):
            g = torch.Generator(device=f"openreg:{index}")
            self.assertEqual(g.device, torch.device("openreg", index))
        self.assertEqual(torch.Generator(device="openreg").device, torch.device("openreg", 0))

    def test_rng_state_of_all_devices(self):
        torch.manual_seed(1)
        states = torch.openreg.get_rng_state_all()
        self.assertEqual(len(states), torch.openreg.device_count())
        first = [_draw(device=f"openreg:{i}") for i in range(len(states))]
        torch.openreg.set_rng_state_all(states)
        again = [_draw(device=f"openreg:{i}") for i in range(len(states))]
        self.assertEqual(first, again, atol=0, rtol=0)
        with self.assertRaisesRegex(ValueError, "one per openreg device"):
            torch.openreg.set_rng_state_all(states[:1] * (len(states) + 1))

    def test_generator_offsets_are_exact(self):
        # A counter-based generator: (seed, offset) is the whole state and
        # every random kernel advances the offset by one step of 4.
        g = torch.Generator(device="openreg")
        g.manual_seed(42)
        self.assertEqual(g.get_offset(), 0)
        a = _draw(generator=g)
        b = _draw(generator=g)
        self.assertEqual(g.get_offset(), 2 * STEP)
        g.set_offset(STEP)
        self.assertEqual(_draw(generator=g), b, atol=0, rtol=0)
        g.set_offset(0)
        self.assertEqual(_draw(generator=g), a, atol=0, rtol=0)
        state = g.get_state()
        self.assertEqual((state.dtype, state.numel()), (torch.uint8, 16))
        c = _draw(generator=g)
        g.set_state(state)
        self.assertEqual(_draw(generator=g), c, atol=0, rtol=0)
        with self.assertRaisesRegex(RuntimeError, "multiples of 4"):
            g.set_offset(3)

    def test_seed_functions(self):
        torch.openreg.manual_seed_all(42)
        self.assertEqual(torch.openreg.initial_seed(), 42)
        seeds = set()
        for _ in range(3):
            torch.openreg.seed_all()
            seeds.add(torch.openreg.initial_seed())
        self.assertEqual(len(seeds), 3)
        # Seeds are unsigned 64-bit values, like torch.Generator's.
        torch.openreg.manual_seed(2**64 - 1)
        self.assertEqual(torch.openreg.initial_seed(), 2**64 - 1)


class TestOpenRegDefaultGeneratorOffset(TestCase):
    def test_offset_of_each_device(self):
        for index in range(torch.openreg.device_count()):
            with self.subTest(device=index):
                torch.openreg.manual_seed_all(3)
                self.assertEqual(torch.openreg.get_offset(index), 0)
                first = _draw(device=f"openreg:{index}")
                second = _draw(device=f"openreg:{index}")
                self.assertEqual(torch.openreg.get_offset(f"openreg:{index}"), 2 * STEP)
                torch.openreg.set_offset(STEP, index)
                self.assertEqual(_draw(device=f"openreg:{index}"), second, atol=0, rtol=0)
                torch.openreg.set_offset(0, torch.device("openreg", index))
                self.assertEqual(_draw(device=f"openreg:{index}"), first, atol=0, rtol=0)

    def test_offset_is_per_device(self):
        if torch.openreg.device_count() < 2:
            self.skipTest("needs 2 openreg devices")
        torch.openreg.manual_seed_all(3)
        _draw(device="openreg:1")
        self.assertEqual((torch.openreg.get_offset(0), torch.openreg.get_offset(1)), (0, STEP))

    def test_bad_offset(self):
        with self.assertRaisesRegex(RuntimeError, "multiples of 4"):
            torch.openreg.set_offset(3)


class TestOpenRegWrongDeviceRandomness(TestCase):
    """A generator or an RNG state of another device is refused with one clear error."""

    def test_generator_of_another_device_type(self):
        cases = {
            "cpu generator, openreg op": lambda: torch.rand(3, device="openreg", generator=torch.Generator()),
            "openreg generator, cpu op": lambda: torch.rand(3, generator=torch.Generator(device="openreg")),
            "openreg generator, cpu tensor": lambda: torch.ones(3).bernoulli_(
                0.5, generator=torch.Generator("openreg")
            ),
        }
        message = "Expected a '(cpu|openreg)' device type for generator but found"
        for name, call in cases.items():
            with self.subTest(name):
                with self.assertRaisesRegex(RuntimeError, message):
                    call()

    def test_state_of_another_device(self):
        saved = torch.openreg.get_rng_state()
        bad_states = {
            "a cpu generator's state": (torch.get_rng_state(), "uint8 tensor of 16 bytes"),
            "a state on the device": (saved.to("openreg"), "must be a CPU tensor"),
            "a state of another dtype": (saved.to(torch.int16), "uint8 tensor of 16 bytes"),
        }
        for name, (state, message) in bad_states.items():
            with self.subTest(name):
                with self.assertRaisesRegex(RuntimeError, message):
                    torch.openreg.set_rng_state(state)
                with self.assertRaisesRegex(RuntimeError, message):
                    torch.Generator(device="openreg").set_state(state)
        # Nothing was changed by the refused states.
        self.assertEqual(torch.openreg.get_rng_state(), saved)
        # And the CPU generator refuses an openreg state in turn.
        with self.assertRaises(RuntimeError):
            torch.set_rng_state(saved)

    def test_state_for_a_device_that_is_not_an_openreg_one(self):
        saved = torch.openreg.get_rng_state()
        count = torch.openreg.device_count()
        out_of_range = f"The device index is out of range: invalid openreg device index {count}"
        with self.assertRaisesRegex(RuntimeError, out_of_range):
            torch.openreg.set_rng_state(saved, device=count)
        with self.assertRaisesRegex(ValueError, "Expected an openreg device, got cpu"):
            torch.openreg.set_rng_state(saved, device="cpu")
        with self.assertRaisesRegex(RuntimeError, out_of_range):
            torch.openreg.get_rng_state(device=count)
        self.assertEqual(torch.openreg.get_rng_state(), saved)


if __name__ == "__main__":
    run_tests()
