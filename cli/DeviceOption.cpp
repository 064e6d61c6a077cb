#include "DeviceOption.h"

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

DeviceChoice parseDevice(const std::string& text) {
  if (text == "auto") return {};
  if (text == "cpu") return DeviceChoice::cpu();
  if (text == "gpu") return DeviceChoice::anyGpu();
  if (text == "gpu:all") return DeviceChoice::everyGpu();
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
    return DeviceChoice::gpus(std::move(indices));
  } catch (const Error& e) {
    throw Error("DEVICE", std::string(e.what()) + " in '" + text + "'");
  }
}

}  // namespace hyperstream
