# Owner(s): ["module: PrivateUse1"]
"""Events of the OpenReg backend (``torch.Event`` / ``torch.openreg.Event``):
recording, querying, waiting, timing, on every device; and what a stream or
an event that does not exist (forged, on a device that does not exist, or
destroyed in the runtime) gives: a readable error, never a crash or a hang,
also for an event freed while the work it waits for is still pending.

Needs the built package on sys.path (``python -m torch_overlay.artifacts.openreg``).
"""

import ctypes
import gc
import os

import torch
import torch_openreg
from torch.testing._internal.common_utils import TestCase, run_tests

INVALID_RESOURCE_HANDLE = 6  # orErrorInvalidResourceHandle, runtime/include/openreg.h


def _runtime() -> ctypes.CDLL:
    rt = ctypes.CDLL(os.path.join(os.path.dirname(torch_openreg.__file__), "lib", "libopenreg_runtime.so"))
    handle_out = [ctypes.POINTER(ctypes.c_void_p)]
    for name in ("orStreamCreate", "orEventCreate"):
        getattr(rt, name).argtypes = handle_out
    for name in ("orStreamDestroy", "orStreamSynchronize", "orStreamQuery", "orEventDestroy",
                 "orEventSynchronize", "orEventQuery"):
        getattr(rt, name).argtypes = [ctypes.c_void_p]
    rt.orEventRecord.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    rt.orStreamWaitEvent.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    rt.orGetErrorString.restype = ctypes.c_char_p
    return rt


class TestOpenRegEvents(TestCase):
    def test_record_query_synchronize_on_each_device(self):
        for index in range(torch.openreg.device_count()):
            with self.subTest(device=index):
                stream = torch.Stream(device=f"openreg:{index}")
                event = torch.Event(device="openreg")
                self.assertTrue(event.query())  # never recorded: nothing to wait for
                with torch.openreg._StreamBlock(stream) as block:
                    event.record(stream)
                    self.assertEqual(event.device, torch.device("openreg", index))
                    self.assertFalse(event.query())  # the stream is held before it
                    block.release()
                    event.synchronize()
                self.assertTrue(event.query())

    def test_wait_orders_a_stream_after_another(self):
        producer, consumer = torch.Stream(device="openreg"), torch.Stream(device="openreg")
        x = torch.zeros(16, device="openreg")
        torch.openreg.synchronize()
        with torch.openreg._StreamBlock(producer) as block:
            with producer:
                x.fill_(5.0)
                done = torch.Event(device="openreg")
                done.record()
            consumer.wait_event(done)
            with consumer:
                y = x.clone()
            self.assertFalse(consumer.query())  # waits for the held producer
            block.release()
        consumer.synchronize()
        self.assertEqual(y.cpu(), torch.full((16,), 5.0))

    def test_elapsed_time_needs_timing_on_both(self):
        start = torch.openreg.Event(enable_timing=True)
        end = torch.openreg.Event(enable_timing=True)
        start.record()
        torch.ones(64, device="openreg").add_(1)
        end.record()
        end.synchronize()
        self.assertGreaterEqual(start.elapsed_time(end), 0.0)
        untimed = torch.openreg.Event()
        untimed.record()
        untimed.synchronize()
        with self.assertRaisesRegex(ValueError, "enable_timing=True"):
            start.elapsed_time(untimed)

    def test_openreg_events_are_torch_events(self):
        # From 2.15.0 on, torch's C++ event API takes the other event only as an
        # exact torch.Event: torch.openreg.Event must give one.
        end = torch.openreg.Event(enable_timing=True)
        self.assertIs(type(end), torch.Event)
        self.assertIsInstance(end, torch.openreg.Event)
        self.assertNotIsInstance(torch.Event(device="cpu"), torch.openreg.Event)
        start = torch.Event(device="openreg", enable_timing=True)
        stream = torch.Stream(device="openreg")
        stream.record_event(start)
        with torch.openreg.stream(stream):
            torch.ones(64, device="openreg").add_(1)
        self.assertIs(stream.record_event(end), end)
        end.synchronize()
        self.assertGreaterEqual(start.elapsed_time(end), 0.0)


class TestOpenRegUnknownStreamsAndEvents(TestCase):
    def test_forged_stream_ids_are_refused(self):
        device_type = torch.Stream(device="openreg").device_type
        for stream_id in (-3, 9, 1 << 40):
            with self.subTest(stream_id=stream_id):
                forged = torch.Stream(stream_id=stream_id, device_index=0, device_type=device_type)
                for use in (forged.query, forged.synchronize, lambda s=forged: torch.openreg.set_stream(s)):
                    with self.assertRaisesRegex(RuntimeError, f"Invalid openreg stream id {stream_id}"):
                        use()
        self.assertEqual(torch.openreg.current_stream().stream_id, 0)

    def test_forged_stream_devices_are_refused(self):
        device_type = torch.Stream(device="openreg").device_type
        count = torch.openreg.device_count()
        for index in (count, 100):
            with self.subTest(device_index=index):
                forged = torch.Stream(stream_id=1, device_index=index, device_type=device_type)
                for use in (forged.query, forged.synchronize, lambda s=forged: torch.openreg.set_stream(s)):
                    with self.assertRaisesRegex(RuntimeError, "The device index is out of range"):
                        use()

    def test_event_freed_before_its_work_ran(self):
        # Deleting an event destroys it in the runtime while the work it was
        # recorded after, and a stream waiting on it, are still pending.
        producer, consumer = torch.Stream(device="openreg"), torch.Stream(device="openreg")
        x = torch.zeros(16, device="openreg")
        torch.openreg.synchronize()
        with torch.openreg._StreamBlock(producer) as block:
            with producer:
                x.fill_(3.0)
            event = torch.Event(device="openreg")
            event.record(producer)
            consumer.wait_event(event)
            del event
            gc.collect()
            with consumer:
                y = x.clone()
            block.release()
        consumer.synchronize()
        self.assertEqual(y.cpu(), torch.full((16,), 3.0))
        # The event reaching the consumer does not mean the producer's worker has popped
        # its last task yet: wait for it too, which must return (no hang on a freed event).
        producer.synchronize()
        self.assertTrue(producer.query() and consumer.query())

    def test_destroyed_runtime_handles_give_an_error_code(self):
        rt = _runtime()
        stream, event = ctypes.c_void_p(), ctypes.c_void_p()
        self.assertEqual(rt.orStreamCreate(ctypes.byref(stream)), 0)
        self.assertEqual(rt.orEventCreate(ctypes.byref(event)), 0)
        self.assertEqual(rt.orEventRecord(event, stream), 0)
        self.assertEqual(rt.orEventDestroy(event), 0)
        self.assertEqual(rt.orStreamDestroy(stream), 0)
        uses = {
            "orStreamSynchronize": lambda: rt.orStreamSynchronize(stream),
            "orStreamQuery": lambda: rt.orStreamQuery(stream),
            "orStreamDestroy": lambda: rt.orStreamDestroy(stream),
            "orEventQuery": lambda: rt.orEventQuery(event),
            "orEventSynchronize": lambda: rt.orEventSynchronize(event),
            "orEventDestroy": lambda: rt.orEventDestroy(event),
            "orStreamWaitEvent": lambda: rt.orStreamWaitEvent(None, event),
        }
        for name, use in uses.items():
            with self.subTest(call=name):
                self.assertEqual(use(), INVALID_RESOURCE_HANDLE)
        self.assertEqual(rt.orGetErrorString(INVALID_RESOURCE_HANDLE), b"invalid resource handle")


if __name__ == "__main__":
    run_tests()
