#include "core/JobOptions.h"

namespace hyperstream {

std::string outputTypeName(OutputType type) {
  switch (type) {
    case OutputType::Float32:
      return "Float32";
    case OutputType::Float64:
      return "Float64";
    case OutputType::Byte:
      return "Byte";
  }
  return "?";
}

}  // namespace hyperstream
