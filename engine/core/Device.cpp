#include "core/Device.h"

#include "core/Error.h"

#include <algorithm>

namespace hyperstream {

namespace {

const char* kForms = "auto, cpu, gpu, gpu:N, gpu:N,M,... or gpu:all";

// A GPU number: digits only.
bool parseIndex(const std::string& text, int* index) {
  if (text.empty() || text.size() > 6 ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *index = std::stoi(text);
  return true;
}

}  // namespace

DeviceChoice DeviceChoice::gpus(std::vector<int> indices) {
  for (size_t i = 0; i < indices.size(); ++i)
    if (std::find(indices.begin(), indices.begin() + static_cast<int64_t>(i), indices[i]) !=
        indices.begin() + static_cast<int64_t>(i))
      throw Error("DEVICE", "GPU " + std::to_string(indices[i]) + " is listed twice");
  return DeviceChoice(Kind::Gpus, std::move(indices), false);
}

DeviceChoice DeviceChoice::parse(const std::string& text) {
  if (text == "auto") return {};
  if (text == "cpu") return cpu();
  if (text == "gpu") return anyGpu();
  if (text == "gpu:all") return everyGpu();
  if (text.rfind("gpu:", 0) != 0 || text.size() == 4)
    throw Error("DEVICE", "unknown device '" + text + "' (" + kForms + ")");
  std::vector<int> indices;
  size_t start = 4;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    int index = 0;
    if (!parseIndex(text.substr(start, end - start), &index))
      throw Error("DEVICE", "'" + text.substr(start, end - start) + "' in '" + text +
                                "' is not a GPU number (" + kForms + ")");
    indices.push_back(index);
    start = end + 1;
  }
  try {
    return gpus(std::move(indices));
  } catch (const Error& e) {
    throw Error("DEVICE", std::string(e.what()) + " in '" + text + "'");
  }
}

std::string DeviceChoice::text() const {
  switch (kind_) {
    case Kind::Auto:
      return "auto";
    case Kind::Cpu:
      return "cpu";
    case Kind::Gpus:
      break;
  }
  if (all_) return "gpu:all";
  if (unnumbered_) return "gpu";
  std::string joined = "gpu:";
  for (size_t i = 0; i < gpus_.size(); ++i)
    joined += (i ? "," : "") + std::to_string(gpus_[i]);
  return joined;
}

}  // namespace hyperstream
