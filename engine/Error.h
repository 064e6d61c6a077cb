#pragma once
// Errors the engine reports to its callers (CLI, QGIS provider).

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

}  // namespace hyperstream
