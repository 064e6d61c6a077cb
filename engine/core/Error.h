#pragma once
// Errors the engine reports to its callers (CLI, QGIS provider).

#include <cstdint>
#include <new>
#include <stdexcept>
#include <string>

namespace hyperstream {

// A failure the user can act on. `parameter` names the offending input (INPUT, OUTPUT, BANDS, ...)
// or is empty when no single parameter is at fault.
class Error : public std::runtime_error {
 public:
  Error(std::string parameter, const std::string& message)
      : std::runtime_error(message), parameter_(std::move(parameter)) {}
  const std::string& parameter() const { return parameter_; }

 private:
  std::string parameter_;
};

// Out of memory while doing `what` (e.g. "while reading rows 1-64 of 'x.tif'"): the RAM budget
// is what the user can change.
inline Error outOfMemory(const std::string& what) {
  return Error("RAM_MB",
               "out of memory " + what + ": lower the RAM budget (RAM_MB, --ram) or free memory");
}

// A compute device failed (no device, driver too old, out of memory, a kernel error). A run on
// device "auto" goes on with the CPU backend; one that asked for the GPU reports it.
class DeviceError : public std::runtime_error {
 public:
  explicit DeviceError(const std::string& message) : std::runtime_error(message) {}
};

// The user asked to stop; nothing was written.
class Canceled : public std::runtime_error {
 public:
  Canceled() : std::runtime_error("canceled by the user") {}
};

// A failure of a job shared by several workers (threads, MPI ranks) on one or more of them, the
// same on every worker.
struct GroupFailure : std::runtime_error {
  GroupFailure(int failedRank, int failedRanks, const std::string& message)
      : std::runtime_error(message), rank(failedRank), ranks(failedRanks) {}
  int rank;   // the lowest worker that failed; `what()` is its message
  int ranks;  // how many failed (when known)
};

// In a catch block around a whole job: rethrows what escaped it as the engine's errors, so that
// every caller (CLI, QGIS, MPI ranks) reports it the same way. Running out of memory becomes an
// Error naming the RAM budget (`ramBytes`, 0 when the job has none); any other unexpected
// exception an Error naming no parameter. Error, Canceled, DeviceError and GroupFailure pass
// unchanged.
[[noreturn]] inline void rethrowAsJobError(int64_t ramBytes) {
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const Canceled&) {
    throw;
  } catch (const DeviceError&) {
    throw;
  } catch (const GroupFailure&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw outOfMemory(ramBytes > 0
                          ? "with a RAM budget of " + std::to_string(ramBytes >> 20) + " MiB"
                          : std::string("while running"));
  } catch (const std::exception& e) {
    throw Error("", std::string("unexpected failure: ") + e.what());
  } catch (...) {
    throw Error("", "unexpected failure");
  }
}

}  // namespace hyperstream
