#include "OpenRegFunctions.h"

#include "OpenRegException.h"

#include <pthread.h>

#include <atomic>

namespace openreg {

// ---------------------------------------------------------------- devices

c10::DeviceIndex device_count() noexcept {
  int count = 0;
  if (orGetDeviceCount(&count) != orSuccess) {
    return 0;  // callers (DeviceGuardImpl::deviceCount) must not throw
  }
  return static_cast<c10::DeviceIndex>(count);
}

c10::DeviceIndex current_device() {
  int device = 0;
  OPENREG_CHECK(orGetDevice(&device));
  return static_cast<c10::DeviceIndex>(device);
}

static void check_index(c10::DeviceIndex index) {
  const auto count = device_count();
  // Worded like the other accelerators' message ("The device index is out
  // of range"), so device-generic code and tests can match one text.
  TORCH_CHECK(
      index >= 0 && index < count,
      "The device index is out of range: invalid openreg device index ",
      static_cast<int>(index),
      ", there are ",
      static_cast<int>(count),
      " openreg device(s), valid indices are 0..",
      static_cast<int>(count) - 1);
}

void set_device(c10::DeviceIndex index) {
  check_index(index);
  OPENREG_CHECK(orSetDevice(index));
}

c10::DeviceIndex resolve_device_index(c10::DeviceIndex index) {
  if (index == -1) {
    return current_device();
  }
  check_index(index);
  return index;
}

c10::Device openreg_device(c10::DeviceIndex index) {
  return c10::Device(c10::kPrivateUse1, resolve_device_index(index));
}

// --------------------------------------------------- initialization, fork

namespace {

std::atomic<bool> g_initialized{false};
bool g_in_bad_fork = false;

void on_fork_child() {
  // Worker threads and queued work do not survive fork(): a child of an
  // initialized process must not touch the devices (like CUDA).
  g_in_bad_fork = g_initialized.load();
}

}  // namespace

void lazy_init() {
  TORCH_CHECK(
      !g_in_bad_fork,
      "Cannot re-initialize OpenReg in forked subprocess. To use OpenReg with "
      "multiprocessing, you must use the 'spawn' start method");
  if (!g_initialized.exchange(true)) {
    pthread_atfork(nullptr, nullptr, &on_fork_child);
  }
}

bool is_initialized() {
  return g_initialized.load() && !g_in_bad_fork;
}

bool is_in_bad_fork() {
  return g_in_bad_fork;
}

}  // namespace openreg
