#pragma once
// The device as the command line names it.

#include "core/Device.h"

#include <string>

namespace hyperstream {

// auto | cpu | gpu | gpu:N | gpu:N,M,... | gpu:all; throws Error("DEVICE").
DeviceChoice parseDevice(const std::string& text);

}  // namespace hyperstream
