// hyperstream devices: the GPUs the CUDA library can use.

#include "Commands.h"
#include "core/Error.h"
#include "run/GpuRuntime.h"

#include <cstdio>

namespace hyperstream {

int runDevicesCommand(const QStringList& arguments) {
  if (arguments.size() > 1) usage("devices takes no arguments");
  std::string whyNot;
  GpuRuntime* runtime = gpuRuntime(&whyNot);
  if (!runtime) {
    std::printf("no GPU backend: %s\n", whyNot.c_str());
    return 1;
  }
  std::printf("%s\n", runtime->versions().c_str());
  try {
    const std::vector<GpuDevice> devices = runtime->devices();
    if (devices.empty()) std::printf("no CUDA device\n");
    for (const GpuDevice& device : devices)
      std::printf("gpu:%d  %s, %.1f GiB (%.1f GiB free), compute capability %d.%d\n", device.index,
                  device.name.c_str(), device.totalBytes / 1073741824.0,
                  device.freeBytes / 1073741824.0, device.major, device.minor);
    return devices.empty() ? 1 : 0;
  } catch (const DeviceError& error) {
    std::printf("%s\n", error.what());
    return 1;
  }
}

}  // namespace hyperstream
