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
    case OutputType::UInt16:
      return "UInt16";
    case OutputType::Int16:
      return "Int16";
    case OutputType::UInt32:
      return "UInt32";
    case OutputType::Int32:
      return "Int32";
    case OutputType::SameAsInput:
      return "Input";
  }
  return "Float32";
}

}  // namespace hyperstream
