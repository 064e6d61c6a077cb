#include "core/Device.h"

#include "core/Error.h"

#include <algorithm>

namespace hyperstream {

DeviceChoice DeviceChoice::gpus(std::vector<int> indices) {
  for (size_t i = 0; i < indices.size(); ++i)
    if (std::find(indices.begin(), indices.begin() + static_cast<int64_t>(i), indices[i]) !=
        indices.begin() + static_cast<int64_t>(i))
      throw Error("DEVICE", "GPU " + std::to_string(indices[i]) + " is listed twice");
  return DeviceChoice(Kind::Gpus, std::move(indices), false);
}

std::string DeviceChoice::text() const {
  if (kind_ == Kind::Auto) return "auto";
  if (kind_ == Kind::Cpu) return "cpu";
  if (all_) return "gpu:all";
  if (unnumbered_) return "gpu";
  std::string joined = "gpu:";
  for (size_t i = 0; i < gpus_.size(); ++i) joined += (i ? "," : "") + std::to_string(gpus_[i]);
  return joined;
}

}  // namespace hyperstream
