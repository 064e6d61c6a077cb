#pragma once
// What the GPU suites share (test_gpu: the covariance jobs; test_gpu_pixels: the per-pixel and
// per-column jobs): whether a GPU is usable, and score files compared.

#include "TestSupport.h"
#include "core/Error.h"
#include "run/GpuRuntime.h"

#include <QString>
#include <QtGlobal>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace testing {

// Empty where the CUDA library loads and names a device (logged); else why not, to skip by.
inline QString whyNoGpu() {
  std::string whyNot;
  hyperstream::GpuRuntime* runtime = hyperstream::gpuRuntime(&whyNot);
  if (!runtime) return QString::fromStdString("no GPU backend: " + whyNot);
  try {
    const std::vector<hyperstream::GpuDevice> devices = runtime->devices();
    if (devices.empty()) return "no CUDA device";
    qInfo("%s; %s", runtime->versions().c_str(), devices[0].name.c_str());
  } catch (const hyperstream::DeviceError& e) {
    return QString("no usable CUDA device: ") + e.what();
  }
  return {};
}

// Two runs' score files read as samples: the largest difference and the largest |score| over the
// samples that are numbers in both, and whether their NaNs sit in the same places.
struct ScoreDifference {
  bool sameShape = true;
  double worst = 0, largest = 0;
};
inline ScoreDifference scoreDifference(const QString& cpuFile, const QString& gpuFile) {
  const std::vector<double> cpu = testing::samplesOf(cpuFile);
  const std::vector<double> gpu = testing::samplesOf(gpuFile);
  ScoreDifference difference;
  difference.sameShape = gpu.size() == cpu.size();
  for (size_t i = 0; difference.sameShape && i < cpu.size(); ++i) {
    difference.sameShape = std::isnan(gpu[i]) == std::isnan(cpu[i]);
    if (std::isnan(cpu[i])) continue;
    difference.largest = std::max(difference.largest, std::abs(cpu[i]));
    difference.worst = std::max(difference.worst, std::abs(gpu[i] - cpu[i]));
  }
  return difference;
}

}  // namespace testing
