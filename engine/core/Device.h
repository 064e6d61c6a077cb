#pragma once
// Where a job runs, as the user chose it: made once where it is named (the CLI parses its text,
// QGIS's DEVICE picks a constructor), and a value from there on.

#include <string>
#include <vector>

namespace hyperstream {

class DeviceChoice {
 public:
  enum class Kind {
    Auto,  // the GPU where one is usable and pays for its start, else the CPU
    Cpu,
    Gpus,  // the GPUs listed (one or several), or every GPU found
  };

  DeviceChoice() = default;  // auto
  static DeviceChoice cpu() { return DeviceChoice(Kind::Cpu, {}, false); }
  static DeviceChoice gpu(int index) { return DeviceChoice(Kind::Gpus, {index}, false); }
  // "gpu" without a number: GPU 0, or the GPU a context gives (an MPI rank's own).
  static DeviceChoice anyGpu() {
    DeviceChoice choice = gpu(0);
    choice.unnumbered_ = true;
    return choice;
  }
  static DeviceChoice gpus(std::vector<int> indices);  // throws Error("DEVICE") on repeats
  static DeviceChoice everyGpu() { return DeviceChoice(Kind::Gpus, {}, true); }
  // `workers` workers on GPU `index`, each with its band of rows: the several-GPU path on a
  // machine with one GPU (how the tests run it there); not offered to users.
  static DeviceChoice sharedGpu(int index, int workers) {
    return DeviceChoice(Kind::Gpus, std::vector<int>(workers, index), false);
  }

  Kind kind() const { return kind_; }
  bool isAuto() const { return kind_ == Kind::Auto; }
  bool isCpu() const { return kind_ == Kind::Cpu; }
  // More than one GPU, or every GPU found (which may be one).
  bool severalGpus() const { return all_ || gpus_.size() > 1; }
  // The GPUs listed; empty for auto, cpu and every GPU.
  const std::vector<int>& gpuIndices() const { return gpus_; }
  bool allGpus() const { return all_; }
  bool unnumberedGpu() const { return unnumbered_; }
  // As the command line writes it: auto, cpu, gpu, gpu:N,M,... or gpu:all.
  std::string text() const;

 private:
  DeviceChoice(Kind kind, std::vector<int> gpus, bool all)
      : kind_(kind), gpus_(std::move(gpus)), all_(all) {}
  Kind kind_ = Kind::Auto;
  std::vector<int> gpus_;
  bool all_ = false;
  bool unnumbered_ = false;
};

}  // namespace hyperstream
