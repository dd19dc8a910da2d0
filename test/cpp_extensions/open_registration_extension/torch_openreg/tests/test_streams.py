# Owner(s): ["module: PrivateUse1"]
"""Streams, events and page-locked memory of the OpenReg backend.

Every stream is a FIFO run by its own worker thread, so device work is
asynchronous. The tests make that observable without sleeping: a stream
block (``torch.openreg._StreamBlock``) holds a stream at its current end
until the test releases it, and every wait on the device has a deadline.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import threading
import unittest
from typing import Callable

import torch
import torch_openreg  # noqa: F401
from torch.testing._internal.common_utils import run_tests, TestCase

DEADLINE_S = 30.0  # a hung device is a failure, never a hung test run


def within_deadline(fn: Callable[[], object]) -> object:
    """Run a blocking device call; fail (instead of hanging) past the deadline."""
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    worker.start()
    worker.join(DEADLINE_S)
    if worker.is_alive():
        raise AssertionError(f"device call did not finish within {DEADLINE_S} s: {fn}")
    return result[0] if result else None


needs_two_devices = unittest.skipIf(torch.openreg.device_count() < 2, "needs 2 openreg devices")


def producer_and_consumer() -> tuple[torch.Stream, torch.Stream, torch.Tensor, torch.Tensor]:
    """Two new streams and two 64-element buffers, src (zeros) for the producer to
    write and dst (-1) for the consumer to copy into; the device is synchronized
    before returning, so no earlier work is still queued."""
    producer = torch.openreg.Stream()
    consumer = torch.openreg.Stream()
    src = torch.zeros(64, device="openreg")
    dst = torch.full((64,), -1.0, device="openreg")
    torch.openreg.synchronize()
    return producer, consumer, src, dst


class TestOpenRegStreams(TestCase):
    def test_stream_gets_the_current_device_index(self):
        s = torch.Stream(device="openreg")
        self.assertEqual(s.device_index, torch.openreg.current_device())
        self.assertEqual(s.device, torch.device("openreg", 0))
        self.assertNotEqual(s.stream_id, 0)  # a pool stream, not the default one
        if torch.openreg.device_count() >= 2:
            with torch.openreg.device(1):
                self.assertEqual(torch.Stream(device="openreg").device_index, 1)

    def test_stream_context_and_accelerator_set_stream(self):
        default = torch.accelerator.current_stream()
        self.assertEqual(default.stream_id, 0)
        s = torch.Stream(device="openreg")
        with s:
            self.assertEqual(torch.accelerator.current_stream(), s)
            self.assertEqual(torch.openreg.current_stream(), s)
        self.assertEqual(torch.accelerator.current_stream(), default)
        torch.accelerator.set_stream(s)
        try:
            self.assertEqual(torch.openreg.current_stream(), s)
        finally:
            torch.accelerator.set_stream(default)
        with torch.openreg.stream(s):
            self.assertEqual(torch.openreg.current_stream(), s)
        self.assertEqual(torch.openreg.current_stream(), torch.openreg.default_stream())

    def test_work_is_queued_and_runs_in_order(self):
        s = torch.openreg.Stream()
        x = torch.zeros(1000, device="openreg")
        torch.openreg.synchronize()
        with torch.openreg._StreamBlock(s) as block:
            with torch.openreg.stream(s):
                x.fill_(1.0)
                x.fill_(2.0)  # FIFO: must win over the first fill
                done = torch.openreg.Event()
                done.record()
            self.assertFalse(s.query())
            self.assertFalse(done.query())
            block.release()
            within_deadline(done.synchronize)
        self.assertTrue(done.query())
        self.assertTrue(s.query())
        self.assertEqual(x.cpu(), torch.full((1000,), 2.0))

    def test_wait_event_orders_streams(self):
        producer, consumer, src, dst = producer_and_consumer()
        with torch.openreg._StreamBlock(producer) as block:
            with torch.openreg.stream(producer):
                src.fill_(5.0)
                ready = torch.openreg.Event()
                ready.record()
            consumer.wait_event(ready)
            with torch.openreg.stream(consumer):
                dst.copy_(src)  # device-to-device: queued on the consumer
            # The consumer cannot run ahead of the blocked producer.
            self.assertFalse(consumer.query())
            block.release()
            within_deadline(consumer.synchronize)
        self.assertEqual(dst.cpu(), torch.full((64,), 5.0))

    def test_without_a_wait_streams_run_independently(self):
        producer, consumer, src, dst = producer_and_consumer()
        with torch.openreg._StreamBlock(producer):
            with torch.openreg.stream(producer):
                src.fill_(5.0)
            with torch.openreg.stream(consumer):
                dst.copy_(src)
            # Nothing orders the consumer after the producer: it already ran.
            within_deadline(consumer.synchronize)
            self.assertFalse(producer.query())
        within_deadline(producer.synchronize)
        self.assertEqual(dst.cpu(), torch.zeros(64))
        self.assertEqual(src.cpu(), torch.full((64,), 5.0))

    # Opens like test_work_is_queued_and_runs_in_order (`duplicates` lists the
    # two as a same-shape pair) and stays written out: the work queued behind
    # the block is what each test is about, and what they check differs (FIFO
    # order on one stream, here one stream waiting for another).
    def test_wait_stream_and_device_synchronize(self):
        a = torch.openreg.Stream()
        b = torch.openreg.Stream()
        x = torch.zeros(8, device="openreg")
        torch.openreg.synchronize()
        with torch.openreg._StreamBlock(a) as block:
            with torch.openreg.stream(a):
                x.fill_(3.0)
            b.wait_stream(a)
            self.assertFalse(b.query())
            block.release()
            within_deadline(torch.openreg.synchronize)  # waits for every stream
            self.assertTrue(a.query() and b.query())
        self.assertEqual(x.cpu(), torch.full((8,), 3.0))

    def test_event_timing(self):
        start = torch.Event(device="openreg", enable_timing=True)
        end = torch.Event(device="openreg", enable_timing=True)
        start.record()
        torch.ones(1000, device="openreg").fill_(2.0)
        end.record()
        within_deadline(end.synchronize)
        self.assertGreaterEqual(start.elapsed_time(end), 0.0)
        untimed = torch.Event(device="openreg")
        untimed.record()
        untimed.synchronize()
        with self.assertRaisesRegex(ValueError, "enable_timing=True"):
            start.elapsed_time(untimed)

    def test_unrecorded_event_and_accelerator_synchronize(self):
        e = torch.openreg.Event()
        self.assertTrue(e.query())
        torch.openreg.current_stream().wait_event(e)  # a no-op, like CUDA
        within_deadline(torch.accelerator.synchronize)

    @needs_two_devices
    def test_streams_are_per_device(self):
        s1 = torch.openreg.Stream(device=1)
        self.assertEqual(s1.device_index, 1)
        x = torch.zeros(4, device="openreg:1")  # written on device 1's default stream
        s1.wait_stream(torch.openreg.default_stream(1))  # else the fill may race it
        with torch.openreg.stream(s1):
            self.assertEqual(torch.openreg.current_device(), 1)
            x.fill_(4.0)
            self.assertEqual(torch.openreg.current_stream(1), s1)
            self.assertEqual(torch.openreg.current_stream(0).stream_id, 0)
        self.assertEqual(torch.openreg.current_device(), 0)
        within_deadline(s1.synchronize)
        self.assertEqual(x.cpu(), torch.full((4,), 4.0))


class TestOpenRegPinnedMemory(TestCase):
    def test_pin_memory(self):
        t = torch.arange(10.0)
        self.assertFalse(t.is_pinned())
        p = t.pin_memory()
        self.assertTrue(p.is_pinned())
        self.assertEqual(p, t)
        self.assertTrue(torch.empty(5, pin_memory=True).is_pinned())
        self.assertTrue(p[2:].is_pinned())  # views of pinned memory

    def test_non_blocking_download_into_pinned_memory(self):
        s = torch.openreg.current_stream()
        x = torch.full((256,), 7.0, device="openreg")
        out = torch.zeros(256, pin_memory=True)
        with torch.openreg._StreamBlock(s) as block:
            out.copy_(x, non_blocking=True)
            self.assertEqual(out, torch.zeros(256))  # not run yet
            block.release()
            within_deadline(s.synchronize)
        self.assertEqual(out, torch.full((256,), 7.0))

    def test_dataloader_pin_memory(self):
        data = torch.utils.data.TensorDataset(torch.arange(12.0).reshape(6, 2))
        loader = torch.utils.data.DataLoader(data, batch_size=3, pin_memory=True)
        batches = [batch for (batch,) in loader]
        self.assertEqual(len(batches), 2)
        self.assertTrue(all(b.is_pinned() for b in batches))
        self.assertEqual(torch.cat(batches), torch.arange(12.0).reshape(6, 2))


if __name__ == "__main__":
    run_tests()
