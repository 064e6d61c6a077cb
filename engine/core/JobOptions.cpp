#include "core/JobOptions.h"

namespace hyperstream {

std::string outputTypeName(OutputType type) {
  if (type == OutputType::Float64) return "Float64";
  return type == OutputType::Byte ? "Byte" : "Float32";
}

}  // namespace hyperstream
